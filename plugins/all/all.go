// Package all registers every built-in of troupe when imported: the envs
// (builtin:classeval, builtin:coding, builtin:lbf, builtin:matrix,
// builtin:writing), the reward functions of package rewards, and the
// loaders of the "wasm" and "grpc" schemes. It lives under plugins/ because it is the table of sources an
// agentfile can name, as telegraf's plugins/inputs/all is the table of its
// inputs; import it wherever the full set is wanted (the troupe command, the
// bench, the example-agentfile test):
//
//	import _ "github.com/troupe-dev/troupe/plugins/all"
//
// A program that wants only some of them imports those packages instead.
package all

import (
	_ "github.com/troupe-dev/troupe/envs/classeval"
	_ "github.com/troupe-dev/troupe/envs/coding"
	_ "github.com/troupe-dev/troupe/envs/lbf"
	_ "github.com/troupe-dev/troupe/envs/matrix"
	_ "github.com/troupe-dev/troupe/envs/writing"
	_ "github.com/troupe-dev/troupe/plugins/grpc"
	_ "github.com/troupe-dev/troupe/plugins/wasm"
	_ "github.com/troupe-dev/troupe/rewards"
)
