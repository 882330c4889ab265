// Package sdk carries the plugin SDK's language-neutral files for tools:
// the ABI specification and the C header, embedded so that `troupe new`
// can scaffold a C plugin without a checkout of troupe. Go plugin authors
// import the kits in its subdirectories instead (sdk/wasmguest for Wasm,
// sdk/serve for go-plugin).
package sdk

import _ "embed"

// CHeader is sdk/troupe_plugin.h, the C header of the Wasm plugin ABI.
//
//go:embed troupe_plugin.h
var CHeader []byte

// ABI is sdk/ABI.md, the Wasm plugin ABI specification.
//
//go:embed ABI.md
var ABI []byte
