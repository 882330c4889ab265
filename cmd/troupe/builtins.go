package main

// Every built-in env, reward and plugin loader registers itself when
// imported; plugins/all imports them all.
import _ "github.com/troupe-dev/troupe/plugins/all"
