// Package wasm loads troupe plugins compiled to WebAssembly as core.Env
// sources and core.RewardFuncs, on the wazero runtime.
//
// Importing the package registers a [core.Loader] for the "wasm" source
// scheme ("wasm:path/to/module.wasm" in an agentfile). A module speaks the
// ABI described in sdk/ABI.md: it exports "troupe_abi_v1" (checked from the
// compiled module before any guest code runs), a guest-owned buffer, and
// calls whose hot path (step) is a flat little-endian encoding of the joint
// action and the step result.
//
// Modules are compiled once per source, with a compilation cache on disk
// (by default os.UserCacheDir()/troupe/wazero, or $TROUPE_WASM_CACHE, or
// [Options.CacheDir]); wazero writes cache entries to a temporary file and
// renames it into place, so processes may share the directory. Each
// [EnvSource.Open] instantiates the module; a reward function pools
// instances and is safe for concurrent use.
//
// Guests are sandboxed: no filesystem (unless core.Sandbox.ReadOnlyDirs
// mounts directories read-only at the same path), no network, no
// environment variables, a fake deterministic clock and random source, a
// memory limit (core.Sandbox.MemoryLimitMiB, default 256) and a per-call
// timeout (core.Sandbox.CallTimeout, default 5 s; a negative value disables
// it, for trusted modules only: a runaway call then never returns).
// The timeout works by rewriting the module (internal/wasminstr): every
// loop counts its iterations in a local and, every 16384 of them, leaves
// native code (so the Go runtime can preempt it) and traps if the host has
// raised an interrupt flag; this costs a few instructions per iteration,
// far less than wazero's own WithCloseOnContextDone, which the host falls
// back to for a module it cannot rewrite.
//
// A trap, exit, timeout or malformed reply makes the call return a
// [*CallError] naming the module and the reason; the instance is closed and
// the next Reset of the same env starts a fresh one. Guest stdout and
// stderr go to log/slog, prefixed with the module name and rate-limited.
package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/troupe-dev/troupe/core"
)

// Defaults for core.Sandbox fields left zero.
const (
	DefaultMemoryLimitMiB = 256
	DefaultCallTimeout    = 5 * time.Second
)

// SandboxDefaults returns sb with a zero MemoryLimitMiB and CallTimeout
// replaced by DefaultMemoryLimitMiB and DefaultCallTimeout: the limits a
// module loaded with sb runs under (core.SandboxDefaulter).
func (*Loader) SandboxDefaults(sb core.Sandbox) core.Sandbox {
	if sb.MemoryLimitMiB == 0 {
		sb.MemoryLimitMiB = DefaultMemoryLimitMiB
	}
	if sb.CallTimeout == 0 {
		sb.CallTimeout = DefaultCallTimeout
	}
	return sb
}

// CacheDirEnv names the environment variable that overrides the default
// compilation cache directory; the value "off" disables the disk cache.
const CacheDirEnv = "TROUPE_WASM_CACHE"

// CacheOff as a cache directory disables the disk cache.
const CacheOff = "off"

const defaultLogLinesPerSecond = 20

// Options configure a [Loader].
type Options struct {
	// CacheDir is the compilation cache directory. Empty means
	// $TROUPE_WASM_CACHE if set, else os.UserCacheDir()/troupe/wazero;
	// "off" keeps compiled code in memory only.
	CacheDir string
	// Logger receives guest output; nil means slog.Default().
	Logger *slog.Logger
	// LogLinesPerSecond bounds each module's logged output (burst: twice
	// as many); 0 means 20.
	LogLinesPerSecond int
}

// Loader compiles and loads Wasm plugins. It implements core.Loader; the
// zero value is not usable, call [NewLoader].
type Loader struct {
	opts Options

	once     sync.Once
	cache    wazero.CompilationCache
	cacheDir string

	// compileMu serialises compilation, as wazero recommends, so that two
	// loads of one module do not compile it twice.
	compileMu sync.Mutex
}

var _ core.Loader = (*Loader)(nil)

// NewLoader returns a loader with the given options. The cache directory
// is resolved on first use.
func NewLoader(opts Options) *Loader { return &Loader{opts: opts} }

var defaultLoader = NewLoader(Options{})

func init() { core.RegisterLoader("wasm", defaultLoader) }

// DefaultLoader returns the loader registered for the "wasm" scheme.
func DefaultLoader() *Loader { return defaultLoader }

// resolveCacheDir returns the directory the given option value selects:
// dir itself, else $TROUPE_WASM_CACHE, else os.UserCacheDir()/troupe/wazero;
// "" if the disk cache is off or no user cache directory exists.
func resolveCacheDir(dir string) string {
	if dir == "" {
		dir = os.Getenv(CacheDirEnv)
	}
	if dir == CacheOff {
		return ""
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "troupe", "wazero")
	}
	return dir
}

func (l *Loader) init() {
	l.once.Do(func() {
		l.cacheDir = resolveCacheDir(l.opts.CacheDir)
		if l.cacheDir != "" {
			c, err := wazero.NewCompilationCacheWithDir(l.cacheDir)
			if err == nil {
				l.cache = c
				return
			}
			l.logger().Warn("wasm: compilation cache directory unusable, caching in memory only", "dir", l.cacheDir, "err", err)
			l.cacheDir = ""
		}
		l.cache = wazero.NewCompilationCache()
	})
}

// cacheDirInUse returns the compilation cache directory in use, or "" if
// compiled code is cached in memory only.
func (l *Loader) cacheDirInUse() string {
	l.init()
	return l.cacheDir
}

// Close releases the loader's compilation cache. Sources loaded from it
// must be closed first.
func (l *Loader) Close(ctx context.Context) error {
	l.init()
	return l.cache.Close(ctx)
}

func (l *Loader) logger() *slog.Logger {
	if l.opts.Logger != nil {
		return l.opts.Logger
	}
	return slog.Default()
}

// LoadEnv compiles the module ref.Path, checks its ABI version and exports,
// instantiates it once to read its spec (with ref.Params), and returns a
// source whose Open makes one instance per env.
func (l *Loader) LoadEnv(ctx context.Context, ref core.SourceRef) (core.EnvSource, error) {
	return l.loadEnvSource(ctx, ref)
}

// loadEnvSource is LoadEnv with the concrete result type.
func (l *Loader) loadEnvSource(ctx context.Context, ref core.SourceRef) (*EnvSource, error) {
	m, err := l.compile(ctx, ref)
	if err != nil {
		return nil, err
	}
	s, err := newEnvSource(ctx, m, ref.Params)
	if err != nil {
		m.close(ctx)
		return nil, err
	}
	return s, nil
}

// LoadReward compiles the module ref.Path and returns its reward function,
// which pools instances internally and is safe for concurrent use.
func (l *Loader) LoadReward(ctx context.Context, ref core.SourceRef) (core.RewardFunc, error) {
	return l.LoadRewardFunc(ctx, ref)
}

// LoadRewardFunc is LoadReward with the concrete result type.
func (l *Loader) LoadRewardFunc(ctx context.Context, ref core.SourceRef) (*RewardFunc, error) {
	m, err := l.compile(ctx, ref)
	if err != nil {
		return nil, err
	}
	r, err := newRewardFunc(ctx, m, ref.Params)
	if err != nil {
		m.close(ctx)
		return nil, err
	}
	return r, nil
}

// ErrNotWasm is returned (wrapped) for a file that is not a WebAssembly
// binary module.
var ErrNotWasm = errors.New("not a WebAssembly binary module (no \\0asm header)")

// readModule reads a module file and checks its header and pinned hash.
func readModule(path, pin string) ([]byte, error) {
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wasm module: %w", err)
	}
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" {
		return nil, fmt.Errorf("wasm module %s: %w", path, ErrNotWasm)
	}
	if pin != "" {
		sum := sha256.Sum256(bin)
		if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, pin) {
			return nil, fmt.Errorf("wasm module %s: sha256 is %s, the agentfile pins %s", path, got, pin)
		}
	}
	return bin, nil
}
