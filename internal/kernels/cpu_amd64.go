package kernels

const asmAvailable = true
