; expect: (2 -2 4 3 -3 2)
(list (round 2.5) (round -2.5) (round 3.5) (floor 3.7) (ceiling -3.2) (truncate 2.9))
