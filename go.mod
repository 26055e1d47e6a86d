module tokenmix

go 1.26
