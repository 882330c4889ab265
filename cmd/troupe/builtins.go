package main

// The built-in envs and rewards register themselves when imported.
import (
	_ "github.com/troupe-dev/troupe/envs/coding"
	_ "github.com/troupe-dev/troupe/envs/lbf"
	_ "github.com/troupe-dev/troupe/envs/matrix"
	_ "github.com/troupe-dev/troupe/envs/writing"
	_ "github.com/troupe-dev/troupe/rewards"
)
