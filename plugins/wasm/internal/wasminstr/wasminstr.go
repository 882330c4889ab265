// Package wasminstr rewrites a WebAssembly binary so that its host can stop
// it cheaply and so that it never holds up the Go runtime: it adds a mutable
// i32 global, exported as [GlobalName], and before every branch back to a
// loop (and, in modules that use tail calls, at the start of every function)
// a countdown.
// Every [Interval]-th time the countdown runs out, the guest executes
// memory.grow 0, which in wazero leaves native code for Go (a point where
// the goroutine can be preempted, for the garbage collector's stop-the-world
// phases and for the timer that sets the global), and then traps
// (unreachable) if the host has set the global to a non-zero value.
//
// A runaway call must loop or recurse; plain recursion ends in a stack
// overflow, so loop back edges (and tail-called functions) are where it is
// stopped.
// The countdown costs a few instructions per iteration, where wazero's own
// termination support (RuntimeConfig.WithCloseOnContextDone) leaves native
// code for Go at every iteration and starts a goroutine per call, which
// makes a Go guest several times slower.
//
// The module must have a memory. Custom sections holding DWARF debug
// information (".debug_*") are dropped, since the rewritten code no longer
// matches their offsets.
package wasminstr

import (
	"bytes"
	"errors"
	"fmt"
)

// GlobalName is the export name of the interrupt global.
const GlobalName = "troupe_interrupt"

// Interval is how many loop iterations pass between two checks of the
// interrupt global (and two exits to Go).
const Interval = 1 << 14

// Section ids.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secCode     = 10
)

// order gives each known section's position in the binary.
var order = map[byte]int{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 13: 6, 6: 7, 7: 8, 8: 9, 9: 10, 12: 11, 10: 12, 11: 13}

type section struct {
	id   byte
	data []byte
}

// Instrument returns a rewritten copy of the module bin.
func Instrument(bin []byte) ([]byte, error) {
	if len(bin) < 8 || !bytes.Equal(bin[:4], []byte("\x00asm")) || !bytes.Equal(bin[4:8], []byte{1, 0, 0, 0}) {
		return nil, errors.New("wasminstr: not a WebAssembly 1.0 binary module")
	}
	var secs []section
	r := &reader{b: bin, off: 8}
	for r.off < len(bin) {
		id := r.byte()
		n := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		if n > uint32(len(bin)-r.off) {
			return nil, fmt.Errorf("wasminstr: section %d at byte %d: size %d beyond the end", id, r.off, n)
		}
		secs = append(secs, section{id, bin[r.off : r.off+int(n)]})
		r.off += int(n)
	}

	var importedGlobals, definedGlobals uint32
	var haveCode, haveMemory bool
	var params []uint32    // parameter count of each type
	var funcTypes []uint32 // type of each defined function
	for _, s := range secs {
		switch s.id {
		case secType:
			p, err := typeParams(s.data)
			if err != nil {
				return nil, err
			}
			params = p
		case secFunction:
			sr := &reader{b: s.data}
			n := sr.u32()
			for i := uint32(0); i < n && sr.err == nil; i++ {
				funcTypes = append(funcTypes, sr.u32())
			}
			if sr.err != nil {
				return nil, sr.err
			}
		case secImport:
			n, mems, err := countImports(s.data)
			if err != nil {
				return nil, err
			}
			importedGlobals = n
			haveMemory = haveMemory || mems > 0
		case secMemory:
			sr := &reader{b: s.data}
			haveMemory = haveMemory || sr.u32() > 0
		case secGlobal:
			sr := &reader{b: s.data}
			definedGlobals = sr.u32()
			if sr.err != nil {
				return nil, sr.err
			}
		case secExport:
			if err := checkExportNames(s.data); err != nil {
				return nil, err
			}
		case secCode:
			haveCode = true
		}
	}
	if !haveCode {
		return nil, errors.New("wasminstr: the module has no code section")
	}
	if !haveMemory {
		return nil, errors.New("wasminstr: the module has no memory")
	}
	g := importedGlobals + definedGlobals // the interrupt global
	fns := make([]funcInfo, len(funcTypes))
	for i, t := range funcTypes {
		if int(t) >= len(params) {
			return nil, fmt.Errorf("wasminstr: function %d has unknown type %d", i, t)
		}
		fns[i].params = params[t]
	}
	ins := inserts{intr: g, count: g + 1, fns: fns}

	out := append([]byte(nil), bin[:8]...)
	put := func(id byte, data []byte) {
		out = append(out, id)
		out = appendU32(out, uint32(len(data)))
		out = append(out, data...)
	}
	// mut i32 interrupt = 0; mut i32 countdown = Interval
	newGlobal := []byte{0x7F, 0x01, 0x41, 0x00, 0x0B, 0x7F, 0x01, 0x41}
	newGlobal = appendS32(newGlobal, Interval)
	newGlobal = append(newGlobal, 0x0B)
	newExport := appendName(nil, GlobalName)
	newExport = append(newExport, 0x03)
	newExport = appendU32(newExport, g)
	wroteGlobal, wroteExport := false, false
	for _, s := range secs {
		if s.id == secCustom {
			if name, ok := customName(s.data); ok && len(name) >= 6 && name[:6] == ".debug" {
				continue
			}
			put(s.id, s.data)
			continue
		}
		pos := order[s.id]
		if !wroteGlobal && pos > order[secGlobal] {
			put(secGlobal, append(appendU32(nil, 2), newGlobal...))
			wroteGlobal = true
		}
		if !wroteExport && pos > order[secExport] {
			put(secExport, append(appendU32(nil, 1), newExport...))
			wroteExport = true
		}
		switch s.id {
		case secGlobal:
			put(s.id, appendCount(s.data, 2, newGlobal))
			wroteGlobal = true
		case secExport:
			put(s.id, appendCount(s.data, 1, newExport))
			wroteExport = true
		case secCode:
			code, err := instrumentCode(s.data, ins)
			if err != nil {
				return nil, err
			}
			put(s.id, code)
		default:
			put(s.id, s.data)
		}
	}
	return out, nil
}

// inserts describes what instrumentCode inserts.
type inserts struct {
	intr, count uint32 // global indices
	fns         []funcInfo
}

type funcInfo struct{ params uint32 }

// backEdgeCheck returns the check inserted before a branch back to a loop,
// counting in local: every Interval-th time, leave native code through
// memory.grow 0 and trap if the interrupt global is set. A local costs less
// than a global, and it is enough: a runaway call has a loop in some frame,
// whose own local counts its iterations.
func backEdgeCheck(intr, local uint32) []byte {
	b := appendU32([]byte{0x20}, local)   // local.get
	b = append(b, 0x41, 0x01, 0x6A, 0x22) // i32.const 1; i32.add; local.tee
	b = appendU32(b, local)               //
	b = append(b, 0x41)                   // i32.const Interval-1
	b = appendS32(b, Interval-1)          //
	b = append(b, 0x71, 0x45, 0x04, 0x40) // i32.and; i32.eqz; if
	b = append(b, 0x41, 0x00, 0x40, 0x00) //   i32.const 0; memory.grow 0
	b = append(b, 0x1A, 0x23)             //   drop; global.get
	b = appendU32(b, intr)                //     intr
	b = append(b, 0x04, 0x40, 0x00, 0x0B) //   if; unreachable; end
	return append(b, 0x0B)                // end
}

// countdown returns the check inserted at function entries in modules with
// tail calls (where a fresh frame's local would not count): the same as
// backEdgeCheck with a global counter.
func countdown(intr, count uint32) []byte {
	b := appendU32([]byte{0x23}, count)   // global.get count
	b = append(b, 0x41, 0x01, 0x6B, 0x24) // i32.const 1; i32.sub; global.set
	b = appendU32(b, count)               //   count
	b = appendU32(append(b, 0x23), count) // global.get count
	b = append(b, 0x45, 0x04, 0x40, 0x41) // i32.eqz; if; i32.const
	b = appendS32(b, Interval)            //   Interval
	b = appendU32(append(b, 0x24), count) //   global.set count
	b = append(b, 0x41, 0x00, 0x40, 0x00) //   i32.const 0; memory.grow 0
	b = append(b, 0x1A, 0x23)             //   drop; global.get
	b = appendU32(b, intr)                //     intr
	b = append(b, 0x04, 0x40, 0x00, 0x0B) //   if; unreachable; end
	return append(b, 0x0B)                // end
}

// appendCount returns a vector section with its count raised by k and
// items appended.
func appendCount(data []byte, k uint32, item []byte) []byte {
	r := &reader{b: data}
	n := r.u32()
	out := appendU32(nil, n+k)
	out = append(out, data[r.off:]...)
	return append(out, item...)
}

func customName(data []byte) (string, bool) {
	r := &reader{b: data}
	n := r.u32()
	if r.err != nil || int(n) > len(data)-r.off {
		return "", false
	}
	return string(data[r.off : r.off+int(n)]), true
}

// countImports returns the numbers of imported globals and memories.
func countImports(data []byte) (globals, memories uint32, err error) {
	r := &reader{b: data}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		r.name()
		r.name()
		switch kind := r.byte(); kind {
		case 0x00: // func
			r.u32()
		case 0x01: // table
			r.refType()
			r.limits()
		case 0x02: // memory
			r.limits()
			memories++
		case 0x03: // global
			r.valType()
			r.byte()
			globals++
		case 0x04: // tag
			r.byte()
			r.u32()
		default:
			r.fail("import %d: unknown kind %#x", i, kind)
		}
	}
	return globals, memories, r.err
}

// typeParams returns the parameter count of every type in the type
// section.
func typeParams(data []byte) ([]uint32, error) {
	r := &reader{b: data}
	n := r.u32()
	var out []uint32
	for i := uint32(0); i < n && r.err == nil; i++ {
		if form := r.byte(); form != 0x60 {
			r.fail("type %d: unsupported form %#x", i, form)
			break
		}
		np := r.u32()
		for j := uint32(0); j < np && r.err == nil; j++ {
			r.valType()
		}
		nr := r.u32()
		for j := uint32(0); j < nr && r.err == nil; j++ {
			r.valType()
		}
		out = append(out, np)
	}
	return out, r.err
}

func checkExportNames(data []byte) error {
	r := &reader{b: data}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if r.name() == GlobalName {
			return fmt.Errorf("wasminstr: the module already exports %q", GlobalName)
		}
		r.byte()
		r.u32()
	}
	return r.err
}

// instrumentCode rewrites the code section: check goes before each branch
// back to a loop and, if the module uses tail calls (which can loop without
// growing the stack), after each body's local declarations.
func instrumentCode(data []byte, ins inserts) ([]byte, error) {
	tail, err := usesTailCalls(data)
	if err != nil {
		return nil, err
	}
	r := &reader{b: data}
	n := r.u32()
	if r.err == nil && int(n) != len(ins.fns) {
		return nil, fmt.Errorf("wasminstr: %d function bodies for %d functions", n, len(ins.fns))
	}
	var entry []byte
	if tail {
		entry = countdown(ins.intr, ins.count)
	}
	out := appendU32(nil, n)
	var body []byte
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		if size > uint32(len(data)-r.off) {
			return nil, fmt.Errorf("wasminstr: function body %d: size %d beyond the code section", i, size)
		}
		b, err := instrumentBody(data[r.off:r.off+int(size)], ins.intr, ins.fns[i].params, entry, body[:0])
		if err != nil {
			return nil, fmt.Errorf("wasminstr: function body %d: %w", i, err)
		}
		body = b
		r.off += int(size)
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if r.err == nil && r.off != len(data) {
		return nil, fmt.Errorf("wasminstr: %d bytes after the last function body", len(data)-r.off)
	}
	return out, r.err
}

// usesTailCalls reports whether any function body has a tail call.
func usesTailCalls(data []byte) (bool, error) {
	r := &reader{b: data}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		size := r.u32()
		if r.err != nil || size > uint32(len(data)-r.off) {
			return false, fmt.Errorf("wasminstr: function body %d: bad size", i)
		}
		br := &reader{b: data[r.off : r.off+int(size)]}
		br.skipLocals()
		for br.off < len(br.b) && br.err == nil {
			op := br.byte()
			if op == 0x12 || op == 0x13 || op == 0x15 {
				return true, nil
			}
			br.skipImmediates(op)
		}
		if br.err != nil {
			return false, fmt.Errorf("wasminstr: function body %d: %w", i, br.err)
		}
		r.off += int(size)
	}
	return false, r.err
}

// lebLen returns the length of the LEB128 number at the start of b.
func lebLen(b []byte) int {
	for i, c := range b {
		if c&0x80 == 0 {
			return i + 1
		}
	}
	return len(b)
}

func (r *reader) skipLocals() {
	groups := r.u32()
	for i := uint32(0); i < groups && r.err == nil; i++ {
		r.u32()
		r.valType()
	}
}

// Kinds of control frames tracked while rewriting a body.
const (
	frameBlock = iota // block, if, try, try_table, the function body
	frameLoop
)

// instrumentBody adds a counter local and inserts a check before every
// branch to a loop label (the back edges, where a runaway loop must pass),
// and entry (if any) at the start.
// Entering a loop is not checked: Go compiles every function to a loop, so
// checking loop entries would cost a check per call.
func instrumentBody(b []byte, intr, params uint32, entry, out []byte) ([]byte, error) {
	r := &reader{b: b}
	groups := r.u32()
	locals := uint64(params)
	for i := uint32(0); i < groups && r.err == nil; i++ {
		locals += uint64(r.u32())
		r.valType()
	}
	if r.err != nil {
		return nil, r.err
	}
	if locals >= 50000 {
		return nil, fmt.Errorf("%d locals: too many to add one", locals)
	}
	// Declare one more i32 local, the back-edge counter.
	out = appendU32(out, groups+1)
	out = append(out, b[lebLen(b):r.off]...)
	out = append(out, 0x01, 0x7F)
	check := backEdgeCheck(intr, uint32(locals))
	out = append(out, entry...)
	frames := []int{frameBlock} // the function body
	isLoop := func(depth uint32) bool {
		i := len(frames) - 1 - int(depth)
		return i >= 0 && frames[i] == frameLoop
	}
	start := r.off
	for r.off < len(b) && r.err == nil {
		opStart := r.off
		op := r.byte()
		if err := r.skipImmediates(op); err != nil {
			return nil, err
		}
		imm := &reader{b: b[:r.off], off: opStart + 1}
		back := false
		switch op {
		case 0x02, 0x04, 0x06: // block if try
			frames = append(frames, frameBlock)
		case 0x03: // loop
			frames = append(frames, frameLoop)
		case 0x0B, 0x18: // end, delegate
			if len(frames) == 0 {
				return nil, fmt.Errorf("at byte %d: end without a block", opStart)
			}
			frames = frames[:len(frames)-1]
		case 0x0C, 0x0D, 0xD4, 0xD6: // br br_if br_on_null br_on_non_null
			back = isLoop(imm.u32())
		case 0x0E: // br_table
			n := imm.u32()
			for i := uint32(0); i <= n; i++ {
				back = isLoop(imm.u32()) || back
			}
		case 0x1F: // try_table: catch labels may target a loop
			imm.blockType()
			n := imm.u32()
			for i := uint32(0); i < n; i++ {
				if kind := imm.byte(); kind <= 0x01 {
					imm.u32()
				}
				back = isLoop(imm.u32()) || back
			}
			frames = append(frames, frameBlock)
		}
		if imm.err != nil {
			return nil, imm.err
		}
		if back {
			out = append(out, b[start:opStart]...)
			out = append(out, check...)
			start = opStart
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(frames) != 0 || len(b) == 0 || b[len(b)-1] != 0x0B {
		return nil, errors.New("body does not end with the end of its blocks")
	}
	return append(out, b[start:]...), nil
}

// skipImmediates reads the immediates of opcode op.
func (r *reader) skipImmediates(op byte) error {
	switch {
	case op == 0x02 || op == 0x03 || op == 0x04 || op == 0x06: // block loop if try
		r.blockType()
	case op == 0x0C || op == 0x0D || op == 0x07 || op == 0x08 || op == 0x09 || op == 0x18 ||
		op == 0x10 || op == 0x12 || op == 0x14 || op == 0x15 || op == 0xD2 || op == 0xD4 || op == 0xD6 ||
		(op >= 0x20 && op <= 0x26) || op == 0x3F || op == 0x40:
		// br br_if catch throw rethrow delegate call return_call call_ref
		// return_call_ref ref.func br_on_null br_on_non_null; local.*,
		// global.*, table.get/set; memory.size/grow
		r.u32()
	case op == 0x0E: // br_table
		n := r.u32()
		for i := uint32(0); i <= n && r.err == nil; i++ {
			r.u32()
		}
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.u32()
		r.u32()
	case op == 0x1C: // select t*
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.valType()
		}
	case op == 0x1F: // try_table
		r.blockType()
		n := r.u32()
		for i := uint32(0); i < n && r.err == nil; i++ {
			switch kind := r.byte(); kind {
			case 0x00, 0x01:
				r.u32()
				r.u32()
			case 0x02, 0x03:
				r.u32()
			default:
				r.fail("unknown catch kind %#x", kind)
			}
		}
	case op >= 0x28 && op <= 0x3E: // loads and stores
		r.memArg()
	case op == 0x41:
		r.leb(5)
	case op == 0x42:
		r.leb(10)
	case op == 0x43:
		r.skip(4)
	case op == 0x44:
		r.skip(8)
	case op == 0xD0: // ref.null
		r.refType()
	case op == 0xFC:
		r.miscOp()
	case op == 0xFD:
		r.simdOp()
	case op == 0xFE:
		if sub := r.u32(); sub == 0x03 { // atomic.fence
			r.byte()
		} else {
			r.memArg()
		}
	case op <= 0x01 || op == 0x05 || op == 0x0A || op == 0x0B || op == 0x0F || op == 0x19 ||
		op == 0x1A || op == 0x1B || (op >= 0x45 && op <= 0xC4) || op == 0xD1 || op == 0xD3 || op == 0xD5:
		// no immediates
	default:
		r.fail("unsupported opcode %#x", op)
	}
	return r.err
}

func (r *reader) miscOp() {
	switch sub := r.u32(); {
	case sub <= 7: // trunc_sat
	case sub == 8 || sub == 10 || sub == 12 || sub == 14: // memory.init memory.copy table.init table.copy
		r.u32()
		r.u32()
	case sub == 9 || sub == 11 || sub == 13 || (sub >= 15 && sub <= 17):
		r.u32()
	default:
		r.fail("unsupported opcode 0xfc %d", sub)
	}
}

func (r *reader) simdOp() {
	switch sub := r.u32(); {
	case sub <= 11 || sub == 92 || sub == 93: // loads, store, load_zero
		r.memArg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		r.skip(16)
	case sub >= 21 && sub <= 34: // extract/replace lane
		r.byte()
	case sub >= 84 && sub <= 91: // load/store lane
		r.memArg()
		r.byte()
	case sub <= 0x113: // no immediates
	default:
		r.fail("unsupported opcode 0xfd %d", sub)
	}
}

// ---- reader --------------------------------------------------------------

type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail("unexpected end")
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) skip(n int) {
	if r.err == nil && n > len(r.b)-r.off {
		r.fail("unexpected end")
		return
	}
	if r.err == nil {
		r.off += n
	}
}

// leb reads a LEB128 number of at most maxBytes bytes and returns its low
// 64 bits.
func (r *reader) leb(maxBytes int) uint64 {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		if i < 10 {
			v |= uint64(c&0x7F) << (7 * i)
		}
		if c&0x80 == 0 {
			return v
		}
	}
	r.fail("LEB128 number longer than %d bytes", maxBytes)
	return 0
}

func (r *reader) u32() uint32 { return uint32(r.leb(5)) }

func (r *reader) name() string {
	n := r.u32()
	if r.err != nil {
		return ""
	}
	if int(n) > len(r.b)-r.off {
		r.fail("name length %d beyond the end", n)
		return ""
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s
}

func isValType(c byte) bool {
	switch c {
	case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F, 0x69: // i32 i64 f32 f64 v128 funcref externref exnref
		return true
	}
	return false
}

func (r *reader) valType() {
	if c := r.byte(); r.err == nil && !isValType(c) {
		r.fail("unsupported value type %#x", c)
	}
}

func (r *reader) refType() {
	if c := r.byte(); r.err == nil && c != 0x70 && c != 0x6F && c != 0x69 {
		r.fail("unsupported reference type %#x", c)
	}
}

func (r *reader) blockType() {
	if r.err != nil || r.off >= len(r.b) {
		r.fail("unexpected end")
		return
	}
	if c := r.b[r.off]; c == 0x40 || isValType(c) {
		r.off++
		return
	}
	r.leb(5) // s33 type index
}

func (r *reader) limits() {
	flags := r.u32()
	r.leb(10)
	if flags&1 != 0 {
		r.leb(10)
	}
}

func (r *reader) memArg() {
	align := r.u32()
	if align&0x40 != 0 { // multi-memory: a memory index follows
		r.u32()
	}
	r.leb(10)
}

// ---- writer --------------------------------------------------------------

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// appendS32 appends a signed LEB128 number.
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}
