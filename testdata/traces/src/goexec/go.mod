module goexec

go 1.26.0
