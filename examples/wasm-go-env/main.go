// Command wasm-go-env is the notes env (package notes) served as a troupe
// Wasm plugin through the Go guest kit. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o notes.wasm ./examples/wasm-go-env
//
// and load it with source = "wasm:notes.wasm" in an agentfile.
package main

import (
	"github.com/troupe-dev/troupe/examples/wasm-go-env/notes"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

// A c-shared Wasm module runs package initialisers but never main, so the
// env is registered here.
func init() { wasmguest.ServeEnv(notes.New) }

func main() {}
