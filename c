reset
gap
gap
