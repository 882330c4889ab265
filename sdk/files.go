// Package sdk carries the plugin SDK's language-neutral files for tools:
// the ABI specification and the C header, embedded so that `troupe new`
// can scaffold a C plugin without a checkout of troupe. Go plugin authors
// import the kits in its subdirectories instead (sdk/wasmguest for Wasm,
// sdk/serve for go-plugin).
package sdk

import (
	"bytes"
	_ "embed"
)

//go:embed troupe_plugin.h
var cHeader []byte

//go:embed ABI.md
var abiSpec []byte

// CHeader returns sdk/troupe_plugin.h, the C header of the Wasm plugin
// ABI, as a fresh copy.
func CHeader() []byte { return bytes.Clone(cHeader) }

// ABI returns sdk/ABI.md, the Wasm plugin ABI specification, as a fresh
// copy.
func ABI() []byte { return bytes.Clone(abiSpec) }
