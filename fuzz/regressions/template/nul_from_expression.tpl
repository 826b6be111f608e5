// $(string.char(0))
