module profstore-demo

go 1.19
