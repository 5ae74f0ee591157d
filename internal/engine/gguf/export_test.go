package gguf

// ParseMeasured lets the external tests measure a parse as this package's do.
var ParseMeasured = parseMeasured
