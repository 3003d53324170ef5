; expect: (vec 1 2)
'[1 2]
