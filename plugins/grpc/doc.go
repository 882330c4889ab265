// Package grpcplugin loads environments and reward functions that run as
// go-plugin subprocesses speaking gRPC, for agentfile sources written
// "grpc:PATH".
//
// Importing the package registers a [core.Loader] for the "grpc" scheme:
//
//	import _ "github.com/troupe-dev/troupe/plugins/grpc"
//
// A plugin binary is any program whose main calls the serve kit
// (github.com/troupe-dev/troupe/sdk/serve), which wraps an ordinary
// [core.Env] or [core.RewardFunc]; the wire protocol is plugins/grpc/proto.
//
// The env instance Open returns has every optional method (core.Truncater,
// core.Prompter, core.Simulator, core.BaselineProvider); its spec's
// Capabilities, set from the plugin's OpenReply flags, declare those the
// plugin's env implements, and the runtime uses only those. A simulator in the plugin gets a generator seeded
// with one value the host draws from the runtime's (see SimulateSeedStream),
// as in the Wasm host.
//
// # Processes
//
// Every env instance is its own plugin process: [core.EnvSource.Open] starts
// one, and the instance's Close stops it. Processes are independent, so a
// crash or a hang costs one worker's episode and nothing else. LoadEnv starts
// the first process at load time (so a missing binary, a failed handshake or
// bad params fail before training starts) and hands it to the first Open. A
// reward function is one process shared by all callers (Score may be called
// concurrently).
//
// When a plugin process dies or a call exceeds the call timeout
// (core.Sandbox.CallTimeout, default 10 s; negative for no limit), the call returns an error that
// names the plugin, the call and the reason (the exit status and the last
// lines the plugin wrote to stderr), the process is stopped, and the next
// Reset on the same env (or the next Score) starts a fresh process
// transparently. The runtime counts the interrupted episode as failed.
//
// All plugin processes end when troupe ends: EnvSource.Close stops the
// source's processes, [CleanupClients] stops every process this package
// started (the CLI calls it on exit, including after Ctrl-C), and plugins
// built with the serve kit exit by themselves when their parent process dies.
//
// # Handshake, versions and pinning
//
// Host and plugin agree on go-plugin's magic cookie ([Handshake]) and on the
// wire protocol version ([ProtocolVersion]); a binary that is not a troupe
// plugin or that speaks another version is refused with an error naming both
// versions. If the source pins the binary's sha256 (core.SourceRef.SHA256),
// the file is checked before every start, and a mismatch names both sums.
//
// Plugin processes are not sandboxed: they run with troupe's rights, and
// core.Sandbox's MemoryLimitMiB and ReadOnlyDirs do not apply to them (only
// CallTimeout does). Use a Wasm module for untrusted code.
//
// # Logs
//
// What a plugin logs through log/slog or the log package (set up by the serve
// kit), writes to stderr or stdout arrives in the host's slog logger, each
// message prefixed with the plugin's file name.
package grpcplugin
