package wasminstr

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// spinModule exports "spin", an infinite loop, and "count", which loops n
// times; it imports one global and defines one, so the interrupt global's
// index must be 2.
var spinModule = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	// type: () -> (), (i32) -> (i32)
	0x01, 0x09, 0x02, 0x60, 0x00, 0x00, 0x60, 0x01, 0x7F, 0x01, 0x7F,
	// import: "env" "g" global i32 const
	0x02, 0x0A, 0x01, 0x03, 'e', 'n', 'v', 0x01, 'g', 0x03, 0x7F, 0x00,
	// function: spin type 0, count type 1
	0x03, 0x03, 0x02, 0x00, 0x01,
	// memory: one, min 1 page
	0x05, 0x03, 0x01, 0x00, 0x01,
	// global: one mutable i32 = 0
	0x06, 0x06, 0x01, 0x7F, 0x01, 0x41, 0x00, 0x0B,
	// export: "spin" func 0, "count" func 1
	0x07, 0x10, 0x02, 0x04, 's', 'p', 'i', 'n', 0x00, 0x00, 0x05, 'c', 'o', 'u', 'n', 't', 0x00, 0x01,
	// code
	0x0A, 0x1F, 0x02,
	// spin: loop br 0 end end
	0x07, 0x00, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B,
	// count: loop (local0 -= 1; br_if local0 != 0) end; local.get 0;
	// i32.const 3 (an immediate byte that looks like loop); drop
	0x15, 0x00,
	0x03, 0x40,
	0x20, 0x00, 0x41, 0x01, 0x6B, 0x21, 0x00,
	0x20, 0x00, 0x0D, 0x00,
	0x0B,
	0x20, 0x00, 0x41, 0x03, 0x1A, 0x0B,
	// custom section ".debug_x" (dropped) and "keep" (kept)
	0x00, 0x0A, 0x08, '.', 'd', 'e', 'b', 'u', 'g', '_', 'x', 0x00,
	0x00, 0x06, 0x04, 'k', 'e', 'e', 'p', 0x01,
}

func instantiate(t *testing.T, bin []byte) (api.Module, func()) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	if _, err := rt.NewHostModuleBuilder("env").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	// The imported global: a host module cannot export globals through the
	// builder, so give env a tiny module that does.
	envMod := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x06, 0x06, 0x01, 0x7F, 0x00, 0x41, 0x07, 0x0B,
		0x07, 0x05, 0x01, 0x01, 'g', 0x03, 0x00}
	rt.Close(ctx)
	rt = wazero.NewRuntime(ctx)
	if _, err := rt.InstantiateWithConfig(ctx, envMod, wazero.NewModuleConfig().WithName("env")); err != nil {
		t.Fatal(err)
	}
	m, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName("spin"))
	if err != nil {
		t.Fatal(err)
	}
	return m, func() { rt.Close(ctx) }
}

// The interrupt stops an infinite loop even with one P and a garbage
// collector that keeps stopping the world: the loop leaves native code
// every Interval iterations, so neither the collector nor the timer that
// sets the global waits for it forever.
func TestInterruptStopsInfiniteLoop(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	out, err := Instrument(spinModule)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), ".debug_x") || !strings.Contains(string(out), "keep") {
		t.Error("custom sections: want .debug_* dropped and others kept")
	}
	m, done := instantiate(t, out)
	defer done()
	g, ok := m.ExportedGlobal(GlobalName).(api.MutableGlobal)
	if !ok {
		t.Fatalf("no mutable global %q", GlobalName)
	}
	ctx := context.Background()
	// Loops still compute the same results.
	res, err := m.ExportedFunction("count").Call(ctx, 1000)
	if err != nil || res[0] != 0 {
		t.Fatalf("count: %v %v", res, err)
	}
	time.AfterFunc(50*time.Millisecond, func() { g.Set(1) })
	start := time.Now()
	_, err = m.ExportedFunction("spin").Call(ctx)
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("spin: %v", err)
	}
	if d := time.Since(start); testenv.Timing() && d > 2*time.Second {
		t.Errorf("interrupt took %v", d)
	}
	// With the global set, the next countdown traps.
	if _, err := m.ExportedFunction("count").Call(ctx, 2*Interval); err == nil {
		t.Error("count ran through a countdown with the interrupt set")
	}
}

func TestInstrumentErrors(t *testing.T) {
	if _, err := Instrument([]byte("not wasm")); err == nil {
		t.Error("garbage accepted")
	}
	once, err := Instrument(spinModule)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Instrument(once); err == nil || !strings.Contains(err.Error(), "already exports") {
		t.Errorf("instrumenting twice: %v", err)
	}
	// Truncations and corruptions give errors or valid output, never a
	// panic.
	for n := 8; n < len(spinModule); n++ {
		if _, err := Instrument(spinModule[:n]); err == nil && n < len(spinModule)-20 { // the last 20 bytes are custom sections
			t.Errorf("truncated to %d bytes: no error", n)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		c := append([]byte(nil), spinModule...)
		c[8+rng.IntN(len(c)-8)] = byte(rng.Uint32())
		Instrument(c)
	}
}

func TestAppendU32(t *testing.T) {
	for _, v := range []uint32{0, 1, 127, 128, 300, 1<<32 - 1} {
		r := &reader{b: appendU32(nil, v)}
		if got := r.u32(); got != v || r.err != nil {
			t.Errorf("LEB round trip of %d: %d %v", v, got, r.err)
		}
	}
}

func TestEntryChecksOnlyWithTailCalls(t *testing.T) {
	ins := inserts{intr: 5, count: 6, fns: []funcInfo{{params: 2}}}
	entry := countdown(5, 6)
	// One body: no locals; return_call 0; end.
	tailCode := []byte{0x01, 0x04, 0x00, 0x12, 0x00, 0x0B}
	out, err := instrumentCode(tailCode, ins)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), string(entry)) {
		t.Error("no entry check in a module with tail calls")
	}
	// One body: no locals; call 0; end. Only the counter local (index 2,
	// after the two parameters) is added.
	plain := []byte{0x01, 0x04, 0x00, 0x10, 0x00, 0x0B}
	out, err = instrumentCode(plain, ins)
	want := []byte{0x01, 0x06, 0x01, 0x01, 0x7F, 0x10, 0x00, 0x0B}
	if err != nil || string(out) != string(want) {
		t.Errorf("module without loops or tail calls: % x, want % x (%v)", out, want, err)
	}
	// A back edge gets the check with the new local's index.
	loop := []byte{0x01, 0x09, 0x01, 0x01, 0x7E, 0x03, 0x40, 0x0C, 0x00, 0x0B, 0x0B}
	out, err = instrumentCode(loop, ins)
	if err != nil || !strings.Contains(string(out), string(backEdgeCheck(5, 3))) {
		t.Errorf("loop: % x (%v)", out, err)
	}
}

func TestAppendS32(t *testing.T) {
	for _, v := range []int32{0, 1, 63, 64, -1, -64, -65, Interval, 1<<31 - 1, -1 << 31} {
		b := appendS32(nil, v)
		// Decode signed LEB128.
		var x int64
		shift := 0
		for i, c := range b {
			x |= int64(c&0x7F) << shift
			shift += 7
			if c&0x80 == 0 {
				if c&0x40 != 0 && shift < 64 {
					x |= -1 << shift
				}
				if i != len(b)-1 {
					t.Fatalf("%d: trailing bytes", v)
				}
			}
		}
		if int32(x) != v {
			t.Errorf("appendS32(%d) decodes to %d", v, x)
		}
	}
}
