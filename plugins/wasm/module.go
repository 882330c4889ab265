package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/wasmabi"
	"github.com/troupe-dev/troupe/plugins/wasm/internal/wasminstr"
)

// wasiModule is the only import module a plugin may use.
const wasiModule = wasi_snapshot_preview1.ModuleName

// module is one compiled plugin with the runtime that holds it.
type module struct {
	name    string // file base name, used in messages
	path    string
	size    int64
	sha256  string
	rt      wazero.Runtime
	cm      wazero.CompiledModule
	timeout time.Duration // <= 0: none
	dog     *watchdog     // stops calls that overrun timeout; nil without one
	// interruptible: compiled from an instrumented copy whose interrupt
	// global stops it (else wazero's CloseOnContextDone does, if timeout).
	interruptible bool
	memMiB        int
	roDirs        []string
	log           *guestLog
	// compileTime is how long CompileModule took (a cache hit is fast).
	compileTime time.Duration
}

// instrument enables the cheap interrupt checks; tests turn it off to
// exercise the fallback.
var instrument = true

// signature of an export: parameter and result types.
type signature struct{ params, results []api.ValueType }

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// exportSigs lists every ABI export with its signature.
var exportSigs = map[string]signature{
	wasmabi.ExportBuffer:     {nil, []api.ValueType{i32}},
	wasmabi.ExportBufferGrow: {[]api.ValueType{i32}, []api.ValueType{i32}},
	wasmabi.ExportOpen:       {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	wasmabi.ExportReset:      {[]api.ValueType{i64}, []api.ValueType{i32}},
	wasmabi.ExportStep:       {[]api.ValueType{i32}, []api.ValueType{i32}},
	wasmabi.ExportState:      {nil, []api.ValueType{i32}},
	wasmabi.ExportClose:      {nil, []api.ValueType{i32}},
	wasmabi.ExportTruncate:   {nil, []api.ValueType{i32}},
	wasmabi.ExportPrompt:     {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	wasmabi.ExportSimulate:   {[]api.ValueType{i32}, []api.ValueType{i32}},
	wasmabi.ExportBaseline:   {[]api.ValueType{i32}, []api.ValueType{i32}},
	wasmabi.ExportScore:      {[]api.ValueType{i32}, []api.ValueType{i32}},
}

// Exports every module needs, and those an env or reward module adds.
var (
	baseExports   = []string{wasmabi.ExportBuffer, wasmabi.ExportBufferGrow, wasmabi.ExportOpen}
	envExports    = []string{wasmabi.ExportReset, wasmabi.ExportStep, wasmabi.ExportState, wasmabi.ExportClose}
	rewardExports = []string{wasmabi.ExportScore}
)

// compile reads, compiles and checks a module: its ABI marker and imports
// (before any guest code runs), and the exports every plugin has.
func (l *Loader) compile(ctx context.Context, ref core.SourceRef) (*module, error) {
	l.init()
	bin, err := readModule(ref.Path, ref.SHA256)
	if err != nil {
		return nil, err
	}
	m := &module{name: filepath.Base(ref.Path), path: ref.Path, size: int64(len(bin)), roDirs: ref.Sandbox.ReadOnlyDirs}
	if err := ref.Sandbox.Validate(); err != nil {
		return nil, fmt.Errorf("wasm module %s: %w", m.name, err.(*core.SettingError).In("sandbox"))
	}
	m.sha256 = sha256hex(bin)
	sb := l.SandboxDefaults(ref.Sandbox)
	m.memMiB, m.timeout = sb.MemoryLimitMiB, sb.CallTimeout
	for _, d := range m.roDirs {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("wasm module %s: sandbox read-only dir %q: want an absolute path", m.name, d)
		}
	}
	m.log = newGuestLog(l.opts.Logger, m.name, l.opts.LogLinesPerSecond)
	if m.timeout > 0 {
		m.dog = newWatchdog(m.timeout)
	}

	// Compile a copy instrumented with cheap interrupt checks
	// (internal/wasminstr), which also keep a long call from holding up the
	// Go runtime's stop-the-world phases; if that fails, fall back to
	// wazero's own, much slower, termination support when there is a
	// timeout.
	if instrument {
		if ibin, ierr := wasminstr.Instrument(bin); ierr == nil {
			m.rt = newRuntime(ctx, l, m.memMiB, false)
			if err = m.compileBinary(ctx, l, ibin); err == nil {
				m.interruptible = true
			} else {
				m.rt.Close(ctx)
				l.logger().Warn("wasm: instrumented module does not compile; using slower termination checks", "module", m.name, "err", err)
			}
		} else {
			l.logger().Warn("wasm: cannot instrument module; using slower termination checks", "module", m.name, "err", ierr)
		}
	}
	if !m.interruptible {
		m.rt = newRuntime(ctx, l, m.memMiB, m.timeout > 0)
		err = m.compileBinary(ctx, l, bin)
	}
	if err != nil {
		m.close(ctx)
		return nil, fmt.Errorf("wasm module %s: compile: %w", m.name, err)
	}
	if err := checkCompiled(m.name, m.cm); err != nil {
		m.close(ctx)
		return nil, err
	}
	return m, nil
}

func (m *module) compileBinary(ctx context.Context, l *Loader, bin []byte) error {
	l.compileMu.Lock()
	defer l.compileMu.Unlock()
	t0 := time.Now()
	cm, err := m.rt.CompileModule(ctx, bin)
	m.compileTime = time.Since(t0)
	m.cm = cm
	return err
}

// newRuntime returns a runtime sharing the loader's compilation cache, with
// the memory limit, wazero's termination on context cancellation if
// closeOnDone, and WASI (whose clock and random source wazero fakes unless
// a module config says otherwise).
func newRuntime(ctx context.Context, l *Loader, memMiB int, closeOnDone bool) wazero.Runtime {
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(l.cache).
		WithMemoryLimitPages(uint32(memMiB) * 16). // 64 KiB pages
		WithCloseOnContextDone(closeOnDone)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	// Instantiating WASI in a fresh runtime fails only on a closed context,
	// which the first instantiation of the plugin then reports.
	wasi_snapshot_preview1.Instantiate(ctx, rt)
	return rt
}

func (m *module) close(ctx context.Context) {
	if m.dog != nil {
		m.dog.forgetAll()
	}
	if m.rt != nil {
		m.rt.Close(ctx)
	}
	if m.log != nil {
		m.log.flush()
	}
}

// abiVersions returns the versions a compiled module declares.
func abiVersions(cm wazero.CompiledModule) []int {
	var have []int
	for name := range cm.ExportedFunctions() {
		if v, ok := wasmabi.MarkerVersion(name); ok {
			have = append(have, v)
		}
	}
	sort.Ints(have)
	return have
}

// checkCompiled checks the ABI marker, the imports, the memory export and
// the base exports' signatures.
func checkCompiled(name string, cm wazero.CompiledModule) error {
	have := abiVersions(cm)
	if !slices.Contains(have, wasmabi.Version) {
		return &ABIError{Module: name, Have: have, Want: wasmabi.Version}
	}
	for _, f := range cm.ImportedFunctions() {
		mod, fn, _ := f.Import()
		if mod != wasiModule {
			return fmt.Errorf("wasm module %s: imports %s.%s; a troupe plugin may import only from %s", name, mod, fn, wasiModule)
		}
	}
	for _, mem := range cm.ImportedMemories() {
		mod, n, _ := mem.Import()
		return fmt.Errorf("wasm module %s: imports memory %s.%s; a troupe plugin must define and export its own memory", name, mod, n)
	}
	if _, ok := cm.ExportedMemories()["memory"]; !ok {
		return fmt.Errorf("wasm module %s: exports no memory named \"memory\"", name)
	}
	return checkExports(name, cm, baseExports, "every troupe plugin")
}

// checkExports checks that names are exported with their ABI signatures.
func checkExports(name string, cm wazero.CompiledModule, names []string, who string) error {
	fns := cm.ExportedFunctions()
	for _, n := range names {
		def, ok := fns[n]
		if !ok {
			return fmt.Errorf("wasm module %s: missing export %s, which %s needs", name, n, who)
		}
		want := exportSigs[n]
		if !slices.Equal(def.ParamTypes(), want.params) || !slices.Equal(def.ResultTypes(), want.results) {
			return fmt.Errorf("wasm module %s: export %s has type %s, want %s", name, n, sigString(def.ParamTypes(), def.ResultTypes()), sigString(want.params, want.results))
		}
	}
	return nil
}

func sigString(params, results []api.ValueType) string {
	s := "("
	for i, p := range params {
		if i > 0 {
			s += ", "
		}
		s += api.ValueTypeName(p)
	}
	s += ") -> ("
	for i, r := range results {
		if i > 0 {
			s += ", "
		}
		s += api.ValueTypeName(r)
	}
	return s + ")"
}

// openKind is the first argument of troupe_open.
type openKind uint64

const (
	openDescribe openKind = 0
	openEnv      openKind = 1
	openReward   openKind = 2
)

// openInstance instantiates the module and calls troupe_open with params;
// it returns the instance and the raw spec JSON.
func (m *module) openInstance(ctx context.Context, kind openKind, params []byte) (*instance, []byte, error) {
	in, err := m.instantiate(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := in.write(params); err != nil {
		in.discard()
		return nil, nil, in.fail("open", err)
	}
	n, err := in.call("open", in.fns[fnOpen], uint64(kind), uint64(len(params)))
	if err != nil {
		in.discard()
		return nil, nil, err
	}
	return in, slices.Clone(in.buf[:n]), nil
}

// parseSpec decodes and checks the JSON a module's open call returned,
// and sets the env spec's Capabilities from the listed capabilities.
func (m *module) parseSpec(raw []byte) (*wasmabi.Spec, error) {
	var spec wasmabi.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, &CallError{Module: m.name, Call: "open", Reason: fmt.Sprintf("malformed spec JSON: %v (reply starts %q)", err, clip(raw, 80))}
	}
	if spec.ABI != wasmabi.Version {
		return nil, &CallError{Module: m.name, Call: "open", Reason: fmt.Sprintf("spec says abi %d, the module's marker export and this host say %d", spec.ABI, wasmabi.Version)}
	}
	for _, c := range spec.Capabilities {
		exp, ok := wasmabi.CapabilityExport[c]
		if !ok {
			return nil, &CallError{Module: m.name, Call: "open", Reason: fmt.Sprintf("unknown capability %q", c)}
		}
		if err := checkExports(m.name, m.cm, []string{exp}, "capability "+c); err != nil {
			return nil, err
		}
	}
	if spec.Env != nil {
		caps, err := core.ParseCapabilities(spec.Capabilities)
		if err != nil {
			return nil, &CallError{Module: m.name, Call: "open", Reason: err.Error()}
		}
		spec.Env.Capabilities = caps
		if err := spec.Env.Validate(); err != nil {
			return nil, &CallError{Module: m.name, Call: "open", Reason: err.Error()}
		}
	}
	if spec.Reward != nil && spec.Reward.Name == "" {
		return nil, &CallError{Module: m.name, Call: "open", Reason: "reward spec has no name"}
	}
	return &spec, nil
}

func clip(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// marshalParams encodes params for troupe_open (nil for none).
func marshalParams(name string, params map[string]any) ([]byte, error) {
	if len(params) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("wasm module %s: params: %w", name, err)
	}
	return b, nil
}
