package main

// The built-in envs and rewards, and the Wasm loader, register themselves
// when imported (the go-plugin loader is imported by main.go).
import (
	_ "github.com/troupe-dev/troupe/envs/coding"
	_ "github.com/troupe-dev/troupe/envs/lbf"
	_ "github.com/troupe-dev/troupe/envs/matrix"
	_ "github.com/troupe-dev/troupe/envs/writing"
	_ "github.com/troupe-dev/troupe/plugins/wasm"
	_ "github.com/troupe-dev/troupe/rewards"
)
