; expect: (yes yes yes)
(list (if 0 'yes 'no) (if '() 'yes 'no) (if (/ 0 0) 'yes 'no))
