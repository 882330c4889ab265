package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/troupe-dev/troupe/internal/wasmabi"
	"github.com/troupe-dev/troupe/plugins/wasm/internal/wasminstr"
)

// Function slots cached per instance.
const (
	fnBufferGrow = iota
	fnOpen
	fnReset
	fnStep
	fnState
	fnClose
	fnTruncate
	fnPrompt
	fnSimulate
	fnBaseline
	fnScore
	numFns
)

var fnNames = [numFns]string{
	fnBufferGrow: wasmabi.ExportBufferGrow,
	fnOpen:       wasmabi.ExportOpen,
	fnReset:      wasmabi.ExportReset,
	fnStep:       wasmabi.ExportStep,
	fnState:      wasmabi.ExportState,
	fnClose:      wasmabi.ExportClose,
	fnTruncate:   wasmabi.ExportTruncate,
	fnPrompt:     wasmabi.ExportPrompt,
	fnSimulate:   wasmabi.ExportSimulate,
	fnBaseline:   wasmabi.ExportBaseline,
	fnScore:      wasmabi.ExportScore,
}

// instance is one instantiated module. It is used by one goroutine at a
// time.
type instance struct {
	m     *module
	mod   api.Module
	mem   api.Memory
	fns   [numFns]api.Function // nil where the module lacks the export
	stack []uint64             // reused for every call

	desc uint32 // address of the guest's {ptr, cap} buffer descriptor
	// buf views the guest's buffer (len = capacity), refreshed after every
	// call; it aliases guest memory.
	buf []byte

	// Per-call timeout: the module's watchdog sets the interrupt global
	// (instrumented modules) or cancels ctx, which makes wazero close the
	// module mid-call.
	stopFlag api.MutableGlobal
	ctx      context.Context
	cancel   context.CancelFunc
	calls    atomic.Uint64 // call sequence number, odd while an unclaimed call runs
	expired  atomic.Bool   // set by the watchdog

	stdout, stderr *streamWriter
	dead           error // set once the instance is discarded
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// instantiate makes a new sandboxed instance and runs its _initialize.
func (m *module) instantiate(ctx context.Context) (in *instance, err error) {
	in = &instance{m: m, stack: make([]uint64, 2)}
	in.stdout = &streamWriter{g: m.log, stream: "stdout"}
	in.stderr = &streamWriter{g: m.log, stream: "stderr"}
	cfg := wazero.NewModuleConfig().
		WithName(""). // anonymous: many instances per runtime
		WithArgs(m.name).
		WithStartFunctions("_initialize").
		WithStdout(in.stdout).
		WithStderr(in.stderr)
	// Clocks, sleep and random source are wazero's deterministic fakes by
	// default; no environment variables, no sockets.
	if len(m.roDirs) > 0 {
		fs := wazero.NewFSConfig()
		for _, d := range m.roDirs {
			fs = fs.WithReadOnlyDirMount(d, d)
		}
		cfg = cfg.WithFSConfig(fs)
	}
	if m.interruptible {
		// Run _initialize ourselves, once the interrupt global exists.
		cfg = cfg.WithStartFunctions()
	}
	ictx := ctx
	if m.timeout > 0 && !m.interruptible {
		var cancel context.CancelFunc
		ictx, cancel = context.WithTimeout(ctx, m.timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			err = &CallError{Module: m.name, Call: "instantiate", Reason: fmt.Sprintf("host panic: %v", r), Discarded: true}
		}
	}()
	mod, err := m.rt.InstantiateModule(ictx, m.cm, cfg)
	if err != nil {
		return nil, in.runtimeError("instantiate", err, ictx.Err() != nil)
	}
	in.mod = mod
	in.mem = mod.Memory()
	for i, name := range fnNames {
		in.fns[i] = mod.ExportedFunction(name)
	}
	in.ctx = context.Background()
	switch {
	case m.interruptible:
		g, ok := mod.ExportedGlobal(wasminstr.GlobalName).(api.MutableGlobal)
		if !ok {
			in.shutdown()
			return nil, &CallError{Module: m.name, Call: "instantiate", Reason: "instrumented module lacks its interrupt global", Discarded: true}
		}
		in.stopFlag = g
		if m.dog != nil {
			m.dog.watch(in)
		}
		if f := mod.ExportedFunction("_initialize"); f != nil {
			if err := in.guarded(f); err != nil {
				e := in.classify("initialize", err)
				in.discard()
				return nil, e
			}
		}
	case m.timeout > 0:
		in.ctx, in.cancel = context.WithCancel(context.Background())
		m.dog.watch(in)
	}
	// Read the buffer descriptor's address.
	bufFn := mod.ExportedFunction(wasmabi.ExportBuffer)
	if err := in.guarded(bufFn); err != nil {
		e := in.classify("buffer", err)
		in.discard()
		return nil, e
	}
	in.desc = uint32(in.stack[0])
	if err := in.refresh(); err != nil {
		e := in.fail("buffer", err)
		in.discard()
		return nil, e
	}
	return in, nil
}

// guarded calls f with the instance's stack under the per-call timeout and
// turns a host panic into an error.
func (in *instance) guarded(f api.Function) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("host panic during the call: %v", r)
		}
	}()
	seq := in.begin()
	err = f.CallWithStack(in.ctx, in.stack)
	if !in.end(seq) {
		// The watchdog claimed the call: it overran, even if it returned.
		in.expired.Store(true)
		if err == nil {
			err = context.DeadlineExceeded
		}
	}
	return err
}

// begin marks a call running and returns its sequence number (odd).
func (in *instance) begin() uint64 { return in.calls.Add(1) }

// end marks call seq finished. It reports false if the watchdog claimed
// the call first (see stop): then the call overran, and the watchdog has
// stopped it or is stopping it.
func (in *instance) end(seq uint64) bool { return in.calls.CompareAndSwap(seq, seq+1) }

// stop stops call seq if it is still running: it claims the call (the
// sequence number moves on, so end reports the overrun) and interrupts it.
// A call that ended since the watchdog read seq is left alone, so that an
// interrupt never lands on the instance's next call. It reports whether it
// stopped the call.
func (in *instance) stop(seq uint64) bool {
	if !in.calls.CompareAndSwap(seq, seq+1) {
		return false
	}
	in.interrupt()
	return true
}

// interrupt stops the running call; the watchdog calls it from its own
// goroutine.
func (in *instance) interrupt() {
	in.expired.Store(true)
	if in.stopFlag != nil {
		in.stopFlag.Set(1)
	} else if in.cancel != nil {
		in.cancel()
	}
}

// call invokes an export with up to two arguments and returns the reply
// length. Traps, exits, timeouts, fatal guest codes and replies beyond the
// buffer discard the instance.
func (in *instance) call(what string, f api.Function, a0, a1 uint64) (int, error) {
	if in.dead != nil {
		return 0, in.dead
	}
	if f == nil {
		return 0, &CallError{Module: in.m.name, Call: what, Reason: "the module does not export " + exportOf(what)}
	}
	in.stack[0], in.stack[1] = a0, a1
	if err := in.guarded(f); err != nil {
		e := in.classify(what, err)
		in.discard()
		return 0, e
	}
	r := int32(uint32(in.stack[0]))
	if err := in.refresh(); err != nil {
		return 0, in.fail(what, err)
	}
	if r < 0 {
		msg := wasmabi.DecodeError(in.buf)
		if r == wasmabi.CodePanic {
			// A Go guest's panic: the value and the panicking frame, then
			// the stack, which only the debug log gets.
			if head, stack, ok := strings.Cut(msg, "\n\n"); ok {
				msg = head
				in.m.log.logger.Debug("wasm "+in.m.name+": guest panic stack", "module", in.m.name, "call", what, "stack", stack)
			}
		}
		e := &CallError{Module: in.m.name, Call: what, Code: r, Reason: wasmabi.CodeName(r) + ": " + msg}
		if wasmabi.FatalCode(r) {
			e.Discarded = true
			in.discard()
		}
		return 0, e
	}
	if int(r) > len(in.buf) {
		return 0, in.fail(what, fmt.Errorf("reply length %d beyond the buffer's capacity of %d bytes", r, len(in.buf)))
	}
	return int(r), nil
}

func exportOf(call string) string { return "troupe_" + call }

// refresh re-reads the buffer descriptor and views the buffer.
func (in *instance) refresh() error {
	ptr, ok1 := in.mem.ReadUint32Le(in.desc)
	capacity, ok2 := in.mem.ReadUint32Le(in.desc + 4)
	if !ok1 || !ok2 {
		return fmt.Errorf("buffer descriptor at %#x is outside memory (%d bytes)", in.desc, in.mem.Size())
	}
	b, ok := in.mem.Read(ptr, capacity)
	if !ok || capacity < 8 {
		return fmt.Errorf("buffer [%#x, +%d) is not inside memory (%d bytes) or smaller than 8 bytes", ptr, capacity, in.mem.Size())
	}
	in.buf = b
	return nil
}

// reserve makes the guest buffer hold at least n bytes.
func (in *instance) reserve(n int) error {
	if n <= len(in.buf) {
		return nil
	}
	if n > 1<<30 {
		return fmt.Errorf("input of %d bytes exceeds the 1 GiB limit", n)
	}
	if _, err := in.call("buffer_grow", in.fns[fnBufferGrow], uint64(n), 0); err != nil {
		return err
	}
	if n > len(in.buf) {
		return in.fail("buffer_grow", fmt.Errorf("asked for %d bytes, the buffer still holds %d", n, len(in.buf)))
	}
	return nil
}

// write copies p to the start of the buffer.
func (in *instance) write(p []byte) error {
	if err := in.reserve(len(p)); err != nil {
		return err
	}
	copy(in.buf, p)
	return nil
}

// fail discards the instance and returns a CallError for err, unless err
// already is one.
func (in *instance) fail(what string, err error) error {
	var ce *CallError
	if errors.As(err, &ce) {
		return err
	}
	in.discard()
	return &CallError{Module: in.m.name, Call: what, Reason: err.Error(), Discarded: true}
}

// classify turns a runtime error from a call into a CallError.
func (in *instance) classify(what string, err error, timedOut ...bool) *CallError {
	e := &CallError{Module: in.m.name, Call: what, Discarded: true, Err: err}
	var exit *sys.ExitError
	switch {
	case in.expired.Load() || (len(timedOut) > 0 && timedOut[0]) || errors.Is(err, context.DeadlineExceeded):
		e.Reason = fmt.Sprintf("timed out after %v (per-call timeout; the module was stopped)", in.m.timeout)
	case errors.As(err, &exit):
		switch exit.ExitCode() {
		case sys.ExitCodeContextCanceled, sys.ExitCodeDeadlineExceeded:
			e.Reason = fmt.Sprintf("timed out after %v (per-call timeout; the module was stopped)", in.m.timeout)
		default:
			e.Reason = fmt.Sprintf("the module exited with code %d", exit.ExitCode())
		}
	default:
		msg := err.Error()
		first, _, _ := strings.Cut(msg, "\n")
		if strings.Contains(msg, "wasm error") || strings.Contains(msg, "wasm stack trace") {
			e.Reason = "trap: " + strings.TrimPrefix(first, "wasm error: ")
		} else {
			e.Reason = first
		}
	}
	if in.stderr != nil {
		if last := in.stderr.lastLines(); last != "" {
			e.Reason += "; guest stderr: " + last
		}
	}
	return e
}

// runtimeError wraps an instantiation failure.
func (in *instance) runtimeError(what string, err error, timedOut bool) error {
	e := in.classify(what, err, timedOut)
	in.stdout.close()
	in.stderr.close()
	return e
}

// discard closes the instance for good.
func (in *instance) discard() {
	if in.dead != nil {
		return
	}
	in.dead = &CallError{Module: in.m.name, Call: "call", Reason: "instance discarded after an earlier failure", Discarded: true}
	in.shutdown()
}

// shutdown releases the instance's module, watch and output.
func (in *instance) shutdown() {
	if in.m.dog != nil {
		in.m.dog.forget(in)
	}
	if in.cancel != nil {
		in.cancel()
	}
	if in.mod != nil {
		in.mod.Close(context.Background())
	}
	in.stdout.close()
	in.stderr.close()
}

// close calls troupe_close (if the module has it and the instance is
// healthy) and then releases the instance.
func (in *instance) close() error {
	if in.dead != nil {
		return nil
	}
	var err error
	if f := in.fns[fnClose]; f != nil {
		_, err = in.call("close", f, 0, 0)
	}
	if in.dead == nil {
		in.dead = &CallError{Module: in.m.name, Call: "call", Reason: "instance closed"}
		in.shutdown()
	}
	return err
}
