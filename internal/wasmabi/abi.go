// Package wasmabi is the byte-level contract between troupe's Wasm host
// (plugins/wasm) and its Go guest kit (sdk/wasmguest): export names, error
// codes, and the little-endian encodings of joint actions, observations,
// step results, episodes and scores described in sdk/ABI.md.
//
// Both sides use this one package, so they cannot drift apart; the C header
// sdk/troupe_plugin.h and the C example are an independent implementation of
// the same layout, and the host's tests load them.
package wasmabi

import (
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/core"
)

// Version is the ABI version this package encodes.
const Version = 1

// MarkerPrefix starts the name of the export that declares a module's ABI
// version: a module speaking version N exports a function "troupe_abi_vN".
const MarkerPrefix = "troupe_abi_v"

// Marker is the export name that declares ABI version [Version].
const Marker = MarkerPrefix + "1"

// Export names. Every export takes and returns only i32/i64 values; a call
// returns the length of its reply in the buffer, or a negative error code.
const (
	// ExportBuffer () -> i32: address of the buffer descriptor, two u32
	// {ptr, cap}; the descriptor's address is fixed for the instance's life.
	ExportBuffer = "troupe_buffer"
	// ExportBufferGrow (i32 min_cap) -> i32: make cap >= min_cap; 0 or <0.
	ExportBufferGrow = "troupe_buffer_grow"
	// ExportOpen (i32 params_len) -> i32: params JSON in, spec JSON out.
	ExportOpen = "troupe_open"
	// ExportReset (i64 seed) -> i32: observations out.
	ExportReset = "troupe_reset"
	// ExportStep (i32 len) -> i32: joint action in, step result out.
	ExportStep = "troupe_step"
	// ExportState () -> i32: state vector out.
	ExportState = "troupe_state"
	// ExportClose () -> i32: releases the env; 0 or <0.
	ExportClose = "troupe_close"
	// ExportTruncate () -> i32: step result out (capability "truncate").
	ExportTruncate = "troupe_truncate"
	// ExportPrompt (i32 agent, i32 decision) -> i32: ChatRequest JSON out
	// (capability "prompt").
	ExportPrompt = "troupe_prompt"
	// ExportSimulate (i32 len) -> i32: SimulateCall JSON in, SimResult JSON
	// out (capability "simulate").
	ExportSimulate = "troupe_simulate"
	// ExportBaseline (i32 len) -> i32: baseline call in, decisions out
	// (capability "baseline").
	ExportBaseline = "troupe_baseline"
	// ExportScore (i32 len) -> i32: episode in, score out (reward modules).
	ExportScore = "troupe_score"
)

// Capability names listed in Spec.Capabilities, one per optional export.
const (
	CapTruncate = "truncate"
	CapPrompt   = "prompt"
	CapSimulate = "simulate"
	CapBaseline = "baseline"
)

// CapabilityExport maps each capability to the export it requires.
var CapabilityExport = map[string]string{
	CapTruncate: ExportTruncate,
	CapPrompt:   ExportPrompt,
	CapSimulate: ExportSimulate,
	CapBaseline: ExportBaseline,
}

// Error codes a call returns instead of a reply length. After any negative
// code the buffer holds an error message: u32 length + UTF-8 bytes.
const (
	// CodeFailed: the env or reward function returned an error (e.g. an
	// illegal action). The instance stays usable.
	CodeFailed int32 = -1
	// CodeBadInput: the call's input could not be decoded.
	CodeBadInput int32 = -2
	// CodeBadState: the call came out of order (step before reset, nothing
	// registered).
	CodeBadState int32 = -3
	// CodeNoMemory: the buffer could not grow.
	CodeNoMemory int32 = -4
	// CodeUnsupported: the module does not implement this call.
	CodeUnsupported int32 = -5
	// CodePanic: the guest caught a fatal error (a Go panic); the host
	// discards the instance.
	CodePanic int32 = -6
)

// CodeName returns a short description of an error code.
func CodeName(code int32) string {
	switch code {
	case CodeFailed:
		return "failed"
	case CodeBadInput:
		return "bad input"
	case CodeBadState:
		return "bad state"
	case CodeNoMemory:
		return "out of memory"
	case CodeUnsupported:
		return "unsupported"
	case CodePanic:
		return "panic"
	}
	return "unknown error code " + strconv.Itoa(int(code))
}

// FatalCode reports whether a guest error code means the instance must be
// discarded: a caught panic, an exhausted buffer, or a code the ABI does not
// define.
func FatalCode(code int32) bool {
	switch code {
	case CodeFailed, CodeBadInput, CodeBadState, CodeUnsupported:
		return false
	}
	return true
}

// MarkerVersion returns N if name is "troupe_abi_vN" with N a positive
// decimal number.
func MarkerVersion(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, MarkerPrefix)
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// Spec is the JSON a module's open call returns.
type Spec struct {
	// ABI repeats the ABI version (must equal the marker export's).
	ABI int `json:"abi"`
	// Env describes the env the module serves, if any.
	Env *core.EnvSpec `json:"env,omitempty"`
	// Capabilities lists the optional env exports the module implements.
	Capabilities []string `json:"capabilities,omitempty"`
	// Reward describes the reward function the module serves, if any.
	Reward *RewardSpec `json:"reward,omitempty"`
}

// RewardSpec describes a reward function served by a module.
type RewardSpec struct {
	Name       string   `json:"name"`
	Components []string `json:"components"`
	// Metrics names the episode metrics the reward needs
	// (core.MetricReader); absent or empty declares none, which is how
	// modules written before the field behave.
	Metrics []string `json:"metrics,omitempty"`
}

// SimulateCall is the JSON input of the simulate export.
type SimulateCall struct {
	Agent    int              `json:"agent"`
	Decision int              `json:"decision"`
	Request  core.ChatRequest `json:"request"`
	// Seed seeds the guest's generator (rand.NewPCG(Seed, SeedStream)).
	Seed uint64 `json:"seed"`
}

// SeedStream is the second PCG word the Go guest kit uses with
// SimulateCall.Seed.
const SeedStream = 0x9e3779b97f4a7c15

// SimResult is the JSON reply of the simulate export.
type SimResult struct {
	Text             string `json:"text"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
}
