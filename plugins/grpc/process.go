package grpcplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/troupe-dev/troupe/core"
)

// Errors the host returns wrap one of these, so callers can tell failures
// apart with errors.Is; the messages say which plugin failed and why.
var (
	// ErrHandshake: the binary did not complete go-plugin's handshake (it is
	// not a troupe plugin, expects another magic cookie, or exited early).
	ErrHandshake = errors.New("plugin handshake failed")
	// ErrProtocolVersion: the plugin speaks another wire protocol version.
	ErrProtocolVersion = errors.New("plugin protocol version mismatch")
	// ErrChecksum: the binary's sha256 is not the pinned one.
	ErrChecksum = errors.New("plugin sha256 mismatch")
	// ErrExited: the plugin process died during a call.
	ErrExited = errors.New("plugin process exited")
	// ErrCallTimeout: a call did not answer within the call timeout.
	ErrCallTimeout = errors.New("plugin call timed out")
	// ErrClosed: the env source or reward function was closed.
	ErrClosed = errors.New("plugin closed")
)

// DefaultCallTimeout bounds one call into a plugin when the source's
// core.Sandbox.CallTimeout is zero.
const DefaultCallTimeout = 10 * time.Second

// minStartTimeout is the least time a process gets to start and handshake.
const minStartTimeout = 10 * time.Second

// exitWait is how long a failed call waits for go-plugin to report the
// process's exit status, so the error can say how the process ended.
const exitWait = time.Second

// killGrace is how long a stop waits for go-plugin's graceful shutdown
// (which itself gives the process 2 s after the plugin acknowledged) before
// it kills the process.
const killGrace = 5 * time.Second

// pluginConfig is what starting a plugin's processes needs, resolved once
// from a core.SourceRef.
type pluginConfig struct {
	kind        string // "env" or "reward", for messages
	label       string // "env grpc:/abs/path", the start of every error
	path        string // absolute path of the binary
	name        string // file name, the prefix of log lines
	checksum    []byte // pinned sha256, or nil
	callTimeout time.Duration
	paramsJSON  []byte
	logger      *slog.Logger
}

var hexSHA256 = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)

// newPluginConfig checks ref and resolves what every start needs.
func newPluginConfig(kind string, ref core.SourceRef, logger *slog.Logger) (*pluginConfig, error) {
	label := kind + " " + ref.String()
	if ref.Path == "" {
		return nil, fmt.Errorf("%s: empty plugin path", label)
	}
	path, err := filepath.Abs(ref.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: plugin binary: %w", label, err)
	case fi.IsDir():
		return nil, fmt.Errorf("%s: plugin binary %s is a directory", label, path)
	case fi.Mode().Perm()&0o111 == 0:
		return nil, fmt.Errorf("%s: plugin binary %s is not executable (mode %v)", label, path, fi.Mode().Perm())
	}
	c := &pluginConfig{
		kind:        kind,
		label:       label,
		path:        path,
		name:        filepath.Base(path),
		callTimeout: ref.Sandbox.CallTimeout,
		logger:      logger,
	}
	if err := ref.Sandbox.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", label, err.(*core.SettingError).In("sandbox"))
	}
	if c.callTimeout == 0 {
		c.callTimeout = DefaultCallTimeout
	}
	if ref.SHA256 != "" {
		if !hexSHA256.MatchString(ref.SHA256) {
			return nil, fmt.Errorf("%s: sha256 %q is not 64 hex digits", label, ref.SHA256)
		}
		c.checksum, _ = hex.DecodeString(ref.SHA256)
	}
	c.paramsJSON = []byte("{}")
	if len(ref.Params) > 0 {
		if c.paramsJSON, err = json.Marshal(ref.Params); err != nil {
			return nil, fmt.Errorf("%s: params cannot be sent to the plugin: %w", label, err)
		}
	}
	return c, nil
}

func (c *pluginConfig) startTimeout() time.Duration {
	return max(c.callTimeout, minStartTimeout)
}

// checksumError reports a pin mismatch with both sums.
func (c *pluginConfig) checksumError() error {
	f, err := os.Open(c.path)
	if err != nil {
		return fmt.Errorf("%s: %w: %v", c.label, ErrChecksum, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%s: %w: reading %s: %v", c.label, ErrChecksum, c.path, err)
	}
	return fmt.Errorf("%s: %w: the agentfile pins %x but %s has %x; rebuild the binary or update the pin",
		c.label, ErrChecksum, c.checksum, c.path, h.Sum(nil))
}

// process is one running plugin process and its go-plugin client.
type process struct {
	cfg     *pluginConfig
	client  *plugin.Client
	cmd     *exec.Cmd
	sockDir string
	stderr  *stderrSink
	pid     int
	conn    any // pb.EnvClient or pb.RewardClient

	exitOnce   sync.Once
	exited     chan struct{} // closed when go-plugin reports the exit
	exitReason string        // set before exited is closed

	killOnce sync.Once

	mu       sync.Mutex
	osProc   *os.Process // set once go-plugin's start returned
	stopping bool        // kill was called
}

// live holds every process started and not yet stopped, for CleanupClients.
var live = struct {
	sync.Mutex
	procs map[*process]struct{}
}{procs: map[*process]struct{}{}}

// CleanupClients stops every plugin process this package started that is
// still running, and waits until they are gone. The CLI calls it on exit
// (also after Ctrl-C); it is safe to call more than once and from several
// goroutines. Env sources and reward functions whose processes it stopped
// restart them on next use unless they were closed.
func CleanupClients() {
	live.Lock()
	procs := make([]*process, 0, len(live.procs))
	for p := range live.procs {
		procs = append(procs, p)
	}
	live.Unlock()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { p.kill(false) })
	}
	wg.Wait()
}

// liveProcesses returns the number of processes not yet stopped.
func liveProcesses() int {
	live.Lock()
	defer live.Unlock()
	return len(live.procs)
}

// testHookStart, if set, runs between a process's registration and its
// start (tests only).
var testHookStart func()

var pluginVersionRE = regexp.MustCompile(`Plugin version: (\d+)`)

// startProcess starts the plugin binary, completes the handshake and
// dispenses the named plugin ("env" or "reward").
func startProcess(cfg *pluginConfig, dispense string) (*process, error) {
	sockDir, err := os.MkdirTemp("", SocketDirPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.label, err)
	}
	p := &process{cfg: cfg, sockDir: sockDir, exited: make(chan struct{})}
	p.stderr = newStderrSink(cfg.logger, cfg.name)

	p.cmd = exec.Command(cfg.path)
	level := "info"
	if cfg.logger.Enabled(context.Background(), slog.LevelDebug) {
		level = "debug"
	}
	p.cmd.Env = []string{plugin.EnvUnixSocketDir + "=" + sockDir, LogLevelEnv + "=" + level}

	var secure *plugin.SecureConfig
	if cfg.checksum != nil {
		secure = &plugin.SecureConfig{Checksum: cfg.checksum, Hash: sha256.New()}
	}
	stdio := func(stream string) io.Writer {
		return &lineWriter{emit: func(line string) {
			p.stderr.remember(line)
			cfg.logger.Info(cfg.name+": "+line, "stream", stream)
		}}
	}
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: map[int]plugin.PluginSet{ProtocolVersion: hostPlugins},
		Cmd:              p.cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		SecureConfig:     secure,
		StartTimeout:     cfg.startTimeout(),
		Stderr:           p.stderr,
		SyncStdout:       stdio("stdout"),
		SyncStderr:       stdio("stderr"),
		Logger: &hclogAdapter{
			slog:         cfg.logger,
			prefix:       cfg.name,
			disabledName: cfg.name,
			onExit:       p.setExited,
		},
	})
	live.Lock()
	live.procs[p] = struct{}{}
	live.Unlock()

	if testHookStart != nil {
		testHookStart()
	}
	rpc, err := p.client.Client()
	if p.cmd.Process != nil {
		p.pid = p.cmd.Process.Pid
	}
	p.mu.Lock()
	p.osProc = p.cmd.Process
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		// kill ran during the start (CleanupClients, concurrently): go-plugin
		// had nothing to stop yet, or stopped the process half-started.
		if p.osProc != nil {
			_ = p.osProc.Kill()
		}
		p.client.Kill()
		_ = os.RemoveAll(sockDir)
		return nil, fmt.Errorf("%s: %w: the process was stopped (CleanupClients) while it started", cfg.label, ErrExited)
	}
	if err != nil {
		err = p.startError(err)
		p.kill(true)
		return nil, err
	}
	p.conn, err = rpc.Dispense(dispense)
	if err != nil {
		p.kill(true)
		return nil, fmt.Errorf("%s: %w", cfg.label, err)
	}
	return p, nil
}

// startError turns go-plugin's start errors into ones that say what is
// wrong with the binary.
func (p *process) startError(err error) error {
	c := p.cfg
	msg := err.Error()
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return c.checksumError()
	case strings.Contains(msg, "incompatible API version"):
		theirs := "an unknown version"
		if m := pluginVersionRE.FindStringSubmatch(msg); m != nil {
			theirs = "version " + m[1]
		}
		return fmt.Errorf("%s: %w: the plugin speaks troupe plugin protocol %s, this troupe speaks version %d; rebuild the plugin against this troupe's sdk/serve",
			c.label, ErrProtocolVersion, theirs, ProtocolVersion)
	case strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("%s: %w: go-plugin core protocol differs (%s)", c.label, ErrProtocolVersion, firstLine(msg))
	case strings.Contains(msg, "plugin exited before we could connect"),
		strings.Contains(msg, "Unrecognized remote plugin message"):
		// Wait for the exit (a process that printed something else stays
		// up until killed), so stderr has been read to the end.
		reason := p.waitExit(exitWait)
		tail := p.stderr.Tail()
		line, _ := strings.CutPrefix(firstLine(msg), "Unrecognized remote plugin message: ")
		switch {
		case strings.Contains(tail, "This binary is a plugin"):
			return fmt.Errorf("%s: %w: the plugin expects a different go-plugin magic cookie than troupe's %s (it was built for another host); rebuild it with troupe's sdk/serve",
				c.label, ErrHandshake, Handshake().MagicCookieKey)
		case strings.Contains(msg, "Unrecognized") && line != "":
			return fmt.Errorf("%s: %w: not a go-plugin binary (its first line of output was %q)%s", c.label, ErrHandshake, line, stderrNote(tail))
		}
		return fmt.Errorf("%s: %w: the process exited (%s) before the handshake; is it a plugin built with troupe's sdk/serve?%s",
			c.label, ErrHandshake, reason, stderrNote(tail))
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("%s: %w: no handshake within %v", c.label, ErrHandshake, c.startTimeout())
	case strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("%s: %w: %s (troupe plugins speak gRPC)", c.label, ErrHandshake, msg)
	}
	return fmt.Errorf("%s: starting %s: %w", c.label, c.path, err)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

func stderrNote(tail string) string {
	if tail == "" {
		return ""
	}
	return "; its stderr ended with: " + tail
}

func (p *process) setExited(reason string) {
	p.exitOnce.Do(func() {
		p.exitReason = reason
		close(p.exited)
	})
}

// waitExit waits up to d for the process's exit and returns how it ended.
func (p *process) waitExit(d time.Duration) string {
	select {
	case <-p.exited:
		return p.exitReason
	case <-time.After(d):
		return "still running"
	}
}

// hasExited reports whether go-plugin saw the process end.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// kill stops the process (hard: SIGKILL first, for a process that is hung
// or already broken) and waits for go-plugin to clean up. Safe to repeat and
// to call while the process starts (startProcess then stops it and fails).
//
// go-plugin's graceful stop asks the plugin to shut down and waits for the
// answer without a deadline, so a plugin that cannot answer (stopped,
// wedged) gets SIGKILL after killGrace.
func (p *process) kill(hard bool) {
	p.killOnce.Do(func() {
		p.mu.Lock()
		p.stopping = true
		proc := p.osProc
		p.mu.Unlock()
		if hard && proc != nil && !p.hasExited() {
			_ = proc.Kill()
		}
		watchdog := time.AfterFunc(killGrace, func() {
			p.mu.Lock()
			proc := p.osProc
			p.mu.Unlock()
			if proc != nil {
				_ = proc.Kill()
			}
		})
		p.client.Kill()
		watchdog.Stop()
		_ = os.RemoveAll(p.sockDir)
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
	})
}

// describe names the process in errors: "env grpc:/path (pid 123)".
func (p *process) describe() string {
	if p.pid == 0 {
		return p.cfg.label
	}
	return fmt.Sprintf("%s (pid %d)", p.cfg.label, p.pid)
}

// callFailure classifies a failed call. Errors of the plugin's own code
// (code UNKNOWN, or the protocol's FAILED_PRECONDITION/INVALID_ARGUMENT/
// UNIMPLEMENTED) and gRPC's message-size refusal (RESOURCE_EXHAUSTED) leave
// the process usable; everything else (a timeout, a dead process, a panic, a
// broken connection) stops the process, and broken is true.
func (p *process) callFailure(op string, err error) (_ error, broken bool) {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unknown, codes.FailedPrecondition, codes.InvalidArgument, codes.Unimplemented, codes.ResourceExhausted:
		if !p.hasExited() {
			return fmt.Errorf("%s: %s: %s", p.describe(), op, st.Message()), false
		}
	case codes.DeadlineExceeded:
		p.kill(true)
		return fmt.Errorf("%s: %s: %w: no answer within %v (sandbox call_timeout); the plugin process was stopped",
			p.describe(), op, ErrCallTimeout, p.cfg.callTimeout), true
	case codes.Internal:
		if strings.HasPrefix(st.Message(), "panic: ") {
			p.kill(true)
			return fmt.Errorf("%s: %s: %s; the plugin process was stopped", p.describe(), op, st.Message()), true
		}
	}
	reason := p.waitExit(exitWait)
	p.kill(true)
	if reason == "still running" {
		return fmt.Errorf("%s: %s: %w: the connection failed (%s); the plugin process was stopped%s",
			p.describe(), op, ErrExited, st.Message(), stderrNote(p.stderr.Tail())), true
	}
	return fmt.Errorf("%s: %s: %w (%s)%s", p.describe(), op, ErrExited, reason, stderrNote(p.stderr.Tail())), true
}

// openFailure explains a failed Open: a binary that does not register the
// service serves no such thing.
func openFailure(p *process, what, kit string, err error) error {
	if st, _ := status.FromError(err); st.Code() == codes.Unimplemented {
		return fmt.Errorf("%s: the plugin binary serves no %s (its main does not call %s or serve.Serve with one): %s",
			p.describe(), strings.TrimPrefix(strings.TrimPrefix(what, "an "), "a "), kit, st.Message())
	}
	err, _ = p.callFailure("Open", err)
	return err
}

// callContext bounds one call by the call timeout (none when it is
// negative).
func (p *process) callContext() (context.Context, context.CancelFunc) {
	if p.cfg.callTimeout < 0 {
		return context.WithCancel(context.Background())
	}
	return context.WithTimeout(context.Background(), p.cfg.callTimeout)
}

// SocketDirPrefix starts the name of the temporary directory the host makes
// for each plugin process's Unix socket (go-plugin's PLUGIN_UNIX_SOCKET_DIR).
// The host removes it when it stops the process; a plugin whose host died
// removes it itself (the serve kit does).
const SocketDirPrefix = "troupe-plugin-"

// LogLevelEnv is the environment variable through which the host tells a
// plugin the lowest level worth logging ("debug" or "info"); the serve kit
// reads it.
const LogLevelEnv = "TROUPE_PLUGIN_LOG_LEVEL"
