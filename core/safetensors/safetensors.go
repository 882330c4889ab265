// Package safetensors reads and writes the safetensors tensor file format
// (https://github.com/huggingface/safetensors), so that checkpoints written
// in Go open with the Python `safetensors` library and vice versa.
//
// A file is: an 8-byte little-endian unsigned integer N; N bytes of UTF-8
// JSON header mapping each tensor name to {"dtype", "shape",
// "data_offsets": [begin, end]} plus an optional "__metadata__" object of
// string values; then the raw little-endian tensor bytes. Offsets are
// relative to the start of the data section. The tensors' byte ranges cover
// the data section exactly: contiguous, without gaps or overlaps.
//
// [Write] orders tensors the way the reference implementation does (by
// dtype alignment, largest first, then by name; for files whose tensors
// share one dtype that is plain name order) and pads the header with spaces
// so that the data section starts at a multiple of 8 bytes. [Read] accepts
// any valid order and validates everything else.
package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/internal/atomicfile"
)

// MaxHeaderSize bounds the JSON header (100 MB, the reference
// implementation's limit); a larger declared size is reported as corrupt.
const MaxHeaderSize = 100_000_000

// metadataKey is the reserved header key holding the string metadata.
const metadataKey = "__metadata__"

// dtypeSizes maps every dtype name of the format to its element size in
// bytes. Sub-byte dtypes (F4, F6_*) are not supported.
var dtypeSizes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
	"C64": 8,
}

// DTypeSize returns the size in bytes of one element of dtype, and false if
// the dtype is unknown.
func DTypeSize(dtype string) (int, bool) {
	n, ok := dtypeSizes[dtype]
	return n, ok
}

// Tensor is one named array of the file: its dtype ("F64", "F32", "I64", …),
// its shape (empty for a scalar) and its raw little-endian bytes in
// row-major (C) order.
type Tensor struct {
	DType string
	Shape []int
	Data  []byte
}

// NumElements returns the product of the shape (1 for a scalar), or an
// error if a dimension is negative or the product overflows.
func NumElements(shape []int) (int, error) {
	n := 1
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d is negative (%d)", i, d)
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v overflows", shape)
		}
		n *= d
	}
	return n, nil
}

// check reports whether t's data length matches its dtype and shape.
func (t Tensor) check() error {
	size, ok := dtypeSizes[t.DType]
	if !ok {
		return fmt.Errorf("unknown dtype %q", t.DType)
	}
	n, err := NumElements(t.Shape)
	if err != nil {
		return err
	}
	if n > math.MaxInt/size {
		return fmt.Errorf("shape %v overflows", t.Shape)
	}
	if len(t.Data) != n*size {
		return fmt.Errorf("dtype %s shape %v needs %d bytes, data has %d", t.DType, t.Shape, n*size, len(t.Data))
	}
	return nil
}

// FromFloat64 returns an F64 tensor of the given shape holding data (copied).
// The length of data must equal the product of shape; [Write] reports a
// mismatch.
func FromFloat64(shape []int, data []float64) Tensor {
	b := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return Tensor{DType: "F64", Shape: slices.Clone(shape), Data: b}
}

// FromFloat32 returns an F32 tensor of the given shape holding data (copied).
func FromFloat32(shape []int, data []float32) Tensor {
	b := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return Tensor{DType: "F32", Shape: slices.Clone(shape), Data: b}
}

// FromInt64 returns an I64 tensor of the given shape holding data (copied).
func FromInt64(shape []int, data []int64) Tensor {
	b := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return Tensor{DType: "I64", Shape: slices.Clone(shape), Data: b}
}

// Float64 decodes the tensor's elements as float64. It accepts F64 and F32
// tensors (F32 values convert exactly).
func (t Tensor) Float64() ([]float64, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	switch t.DType {
	case "F64":
		out := make([]float64, len(t.Data)/8)
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
		return out, nil
	case "F32":
		out := make([]float64, len(t.Data)/4)
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
		return out, nil
	}
	return nil, fmt.Errorf("dtype %s is not a float dtype (want F64 or F32)", t.DType)
}

// Int64 decodes the tensor's elements as int64. It accepts I64, I32, I16,
// I8, U32, U16 and U8 tensors, and U64 tensors whose values fit in int64.
func (t Tensor) Int64() ([]int64, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	size := dtypeSizes[t.DType]
	out := make([]int64, len(t.Data)/size)
	le := binary.LittleEndian
	for i := range out {
		b := t.Data[size*i:]
		switch t.DType {
		case "I64":
			out[i] = int64(le.Uint64(b))
		case "U64":
			u := le.Uint64(b)
			if u > math.MaxInt64 {
				return nil, fmt.Errorf("element %d (%d) does not fit in int64", i, u)
			}
			out[i] = int64(u)
		case "I32":
			out[i] = int64(int32(le.Uint32(b)))
		case "U32":
			out[i] = int64(le.Uint32(b))
		case "I16":
			out[i] = int64(int16(le.Uint16(b)))
		case "U16":
			out[i] = int64(le.Uint16(b))
		case "I8":
			out[i] = int64(int8(b[0]))
		case "U8":
			out[i] = int64(b[0])
		default:
			return nil, fmt.Errorf("dtype %s is not an integer dtype", t.DType)
		}
	}
	return out, nil
}

// headerEntry is one tensor's header record.
type headerEntry struct {
	DType       string `json:"dtype"`
	Shape       []int  `json:"shape"`
	DataOffsets [2]int `json:"data_offsets"`
}

// alignment is the reference implementation's sort key: larger element
// sizes first, so that each tensor's data is aligned to its element size.
func alignment(dtype string) int { return dtypeSizes[dtype] }

// Write writes tensors and metadata (nil or empty for none) in the
// safetensors format. Names must be non-empty and must not be
// "__metadata__"; each tensor's data length must match its dtype and shape.
func Write(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for name, t := range tensors {
		if name == "" {
			return errors.New("safetensors: empty tensor name")
		}
		if name == metadataKey {
			return fmt.Errorf("safetensors: tensor name %q is reserved", metadataKey)
		}
		if !utf8.ValidString(name) {
			return fmt.Errorf("safetensors: tensor name %q is not valid UTF-8", name)
		}
		if err := t.check(); err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		ai, aj := alignment(tensors[names[i]].DType), alignment(tensors[names[j]].DType)
		if ai != aj {
			return ai > aj
		}
		return names[i] < names[j]
	})

	// Build the header by hand so that key order is the data order (the
	// format does not require it, but it makes files easy to read).
	var hdr bytes.Buffer
	hdr.WriteByte('{')
	first := true
	if len(metadata) > 0 {
		raw, err := json.Marshal(metadata) // encoding/json sorts map keys
		if err != nil {
			return fmt.Errorf("safetensors: metadata: %w", err)
		}
		hdr.WriteString(strconv.Quote(metadataKey))
		hdr.WriteByte(':')
		hdr.Write(raw)
		first = false
	}
	offset := 0
	for _, name := range names {
		t := tensors[name]
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		e := headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int{offset, offset + len(t.Data)}}
		offset += len(t.Data)
		key, err := json.Marshal(name)
		if err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		val, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		if !first {
			hdr.WriteByte(',')
		}
		first = false
		hdr.Write(key)
		hdr.WriteByte(':')
		hdr.Write(val)
	}
	hdr.WriteByte('}')
	for (8+hdr.Len())%8 != 0 {
		hdr.WriteByte(' ')
	}

	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(hdr.Len()))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := w.Write(hdr.Bytes()); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for _, name := range names {
		if _, err := w.Write(tensors[name].Data); err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
	}
	return nil
}

// Marshal returns the safetensors encoding of tensors and metadata.
func Marshal(tensors map[string]Tensor, metadata map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, tensors, metadata); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Read parses a whole safetensors file. The returned tensors' Data slices
// alias b. It validates the header length, the JSON header (no duplicate
// names, known dtypes, non-negative shapes, well-formed offsets, string-only
// metadata) and that the tensors' byte ranges match their dtypes and shapes
// and tile the data section exactly.
func Read(b []byte) (map[string]Tensor, map[string]string, error) {
	if len(b) < 8 {
		return nil, nil, fmt.Errorf("safetensors: file is %d bytes, shorter than the 8-byte header length", len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > MaxHeaderSize {
		return nil, nil, fmt.Errorf("safetensors: header length %d exceeds the %d-byte limit (corrupt file?)", n, MaxHeaderSize)
	}
	if n < 2 {
		return nil, nil, fmt.Errorf("safetensors: header length %d is too small for a JSON object", n)
	}
	if uint64(len(b)-8) < n {
		return nil, nil, fmt.Errorf("safetensors: truncated file: header length is %d bytes but only %d bytes follow", n, len(b)-8)
	}
	hdr := b[8 : 8+n]
	data := b[8+n:]
	if !utf8.Valid(hdr) {
		return nil, nil, errors.New("safetensors: header is not valid UTF-8")
	}
	if hdr[0] != '{' {
		return nil, nil, fmt.Errorf("safetensors: header must start with '{', got %q", hdr[0])
	}

	entries, metadata, err := parseHeader(hdr)
	if err != nil {
		return nil, nil, fmt.Errorf("safetensors: header: %w", err)
	}

	type span struct {
		name       string
		begin, end int
	}
	spans := make([]span, 0, len(entries))
	tensors := make(map[string]Tensor, len(entries))
	for name, e := range entries {
		size, ok := dtypeSizes[e.DType]
		if !ok {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", name, e.DType)
		}
		count, err := NumElements(e.Shape)
		if err != nil {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: %w", name, err)
		}
		begin, end := e.DataOffsets[0], e.DataOffsets[1]
		if begin < 0 || end < begin {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: bad data_offsets [%d, %d]", name, begin, end)
		}
		if count > math.MaxInt/size || end-begin != count*size {
			return nil, nil, fmt.Errorf("safetensors: tensor %q: dtype %s shape %v needs %d bytes but data_offsets [%d, %d] span %d", name, e.DType, e.Shape, count*size, begin, end, end-begin)
		}
		if end > len(data) {
			return nil, nil, fmt.Errorf("safetensors: truncated file: tensor %q ends at data offset %d but the data section has %d bytes", name, end, len(data))
		}
		spans = append(spans, span{name, begin, end})
		shape := e.Shape
		if shape == nil {
			shape = []int{}
		}
		tensors[name] = Tensor{DType: e.DType, Shape: shape, Data: data[begin:end:end]}
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	pos := 0
	for i, s := range spans {
		if s.begin < pos {
			return nil, nil, fmt.Errorf("safetensors: tensor %q (bytes %d–%d) overlaps tensor %q (ends at %d)", s.name, s.begin, s.end, spans[i-1].name, pos)
		}
		if s.begin > pos {
			return nil, nil, fmt.Errorf("safetensors: gap in data section: bytes %d–%d before tensor %q belong to no tensor", pos, s.begin, s.name)
		}
		pos = s.end
	}
	if pos != len(data) {
		return nil, nil, fmt.Errorf("safetensors: data section has %d bytes but the tensors cover %d (trailing bytes)", len(data), pos)
	}
	return tensors, metadata, nil
}

// parseHeader decodes the JSON header object, rejecting duplicate keys.
func parseHeader(hdr []byte) (map[string]headerEntry, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	entries := map[string]headerEntry{}
	var metadata map[string]string
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("invalid JSON: %w", err)
		}
		key := tok.(string) // object keys are always strings
		if seen[key] {
			return nil, nil, fmt.Errorf("key %q appears twice", key)
		}
		seen[key] = true
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("key %q: invalid JSON: %w", key, err)
		}
		if key == metadataKey {
			if string(raw) == "null" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				return nil, nil, fmt.Errorf("%s must be an object of strings", metadataKey)
			}
			metadata = make(map[string]string, len(m))
			for k, v := range m {
				s, ok := v.(string)
				if !ok {
					return nil, nil, fmt.Errorf("%s key %q: value must be a string, got %s", metadataKey, k, jsonKind(v))
				}
				metadata[k] = s
			}
			continue
		}
		var e headerEntry
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil || probe == nil {
			return nil, nil, fmt.Errorf("tensor %q: entry must be an object with dtype, shape and data_offsets", key)
		}
		for _, field := range []string{"dtype", "shape", "data_offsets"} {
			if _, ok := probe[field]; !ok {
				return nil, nil, fmt.Errorf("tensor %q: missing %q", key, field)
			}
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, nil, fmt.Errorf("tensor %q: %w", key, err)
		}
		var offs []json.Number
		if err := json.Unmarshal(probe["data_offsets"], &offs); err != nil || len(offs) != 2 {
			return nil, nil, fmt.Errorf("tensor %q: data_offsets must be [begin, end]", key)
		}
		entries[key] = e
	}
	if _, err := dec.Token(); err != nil { // closing brace
		return nil, nil, fmt.Errorf("invalid JSON: %w", err)
	}
	// Only padding whitespace may follow the object.
	for _, c := range hdr[dec.InputOffset():] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return nil, nil, fmt.Errorf("unexpected %q after the header object (only space padding is allowed)", c)
		}
	}
	return entries, metadata, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// WriteFile writes tensors and metadata to path atomically: it writes a
// temporary file in the same directory, syncs it, renames it over path and
// syncs the directory, so a crash leaves either the old file or the new
// one, never a torn file.
func WriteFile(path string, tensors map[string]Tensor, metadata map[string]string) error {
	b, err := Marshal(tensors, metadata)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

// ReadFile reads and validates the safetensors file at path. Errors name
// the path.
func ReadFile(path string) (map[string]Tensor, map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	t, m, err := Read(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, m, nil
}
