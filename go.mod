module github.com/skulk/skulk

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/ardanlabs/jinja v1.8.0 // indirect
	github.com/fxamacker/cbor/v2 v2.10.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/quic-go/quic-go v0.65.0 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
