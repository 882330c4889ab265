package policy

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/core/safetensors"
)

func mustNew(t testing.TB, cfg Config) *Policy {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func randObs(rng *rand.Rand, n int) []float64 {
	o := make([]float64, n)
	for i := range o {
		o[i] = rng.NormFloat64()
	}
	return o
}

// perturb moves all parameters away from the near-zero output init so that
// tests exercise non-trivial logits.
func perturb(p *Policy, seed uint64, scale float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range p.params {
		p.params[i] += scale * rng.NormFloat64()
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{ObsSize: 3, NumDecisions: 2, NumAgents: 2, Hidden: []int{4}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Config{
		"obs_size":        {ObsSize: 0, NumDecisions: 2, NumAgents: 1},
		"num_decisions":   {ObsSize: 1, NumDecisions: 0, NumAgents: 1},
		"num_agents":      {ObsSize: 1, NumDecisions: 2, NumAgents: -1},
		"hidden: layer 1": {ObsSize: 1, NumDecisions: 2, NumAgents: 1, Hidden: []int{3, 0}},
		"hidden: layer 0": {ObsSize: 1, NumDecisions: 2, NumAgents: 1, Hidden: []int{MaxWidth + 1}},
		"too large":       {ObsSize: 1 << 20, NumDecisions: 2, NumAgents: 1, Hidden: []int{MaxWidth}},
	}
	for want, cfg := range bad {
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(%+v): error %v, want one mentioning %q", cfg, err, want)
		}
	}
}

func TestInitNearUniformAndDeterministic(t *testing.T) {
	for _, shared := range []bool{true, false} {
		cfg := Config{ObsSize: 32, NumDecisions: 8, NumAgents: 4, Hidden: []int{64, 64}, Shared: shared, Seed: 7}
		p := mustNew(t, cfg)
		q := mustNew(t, cfg)
		for i := range p.params {
			if p.params[i] != q.params[i] {
				t.Fatal("same seed gave different parameters")
			}
		}
		cfg.Seed = 8
		r := mustNew(t, cfg)
		if r.params[0] == p.params[0] && r.params[1] == p.params[1] {
			t.Error("different seeds gave the same parameters")
		}
		rng := rand.New(rand.NewPCG(1, 2))
		mask := []bool{true, false, true, true, false, true, true, true}
		lp := make([]float64, 8)
		for trial := 0; trial < 20; trial++ {
			if err := p.LogProbs(trial%4, randObs(rng, 32), mask, lp); err != nil {
				t.Fatal(err)
			}
			for d, v := range lp {
				if !mask[d] {
					if !math.IsInf(v, -1) {
						t.Errorf("illegal decision %d has log-prob %v", d, v)
					}
					continue
				}
				if math.Abs(math.Exp(v)-1.0/6) > 0.01 {
					t.Errorf("initial probability %v, want ≈ 1/6", math.Exp(v))
				}
			}
		}
	}
}

func TestOrthogonalInit(t *testing.T) {
	p := mustNew(t, Config{ObsSize: 5, NumDecisions: 3, NumAgents: 1, Hidden: []int{8}, Seed: 3})
	// Layer 0: 8×5, columns orthonormal × √2, so WᵀW = 2·I (5×5).
	w := p.weight(0, 0)
	for i := 0; i < 5; i++ {
		for j := 0; j < 5; j++ {
			var s float64
			for r := 0; r < 8; r++ {
				s += w[r*5+i] * w[r*5+j]
			}
			want := 0.0
			if i == j {
				want = 2
			}
			if math.Abs(s-want) > 1e-12 {
				t.Errorf("layer0 WᵀW[%d][%d] = %v, want %v", i, j, s, want)
			}
		}
	}
	// Layer 1: 3×8, rows orthonormal × 0.01, so WWᵀ = 1e-4·I (3×3).
	w = p.weight(0, 1)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			s := dot(w[i*8:(i+1)*8], w[j*8:(j+1)*8])
			want := 0.0
			if i == j {
				want = 1e-4
			}
			if math.Abs(s-want) > 1e-15 {
				t.Errorf("layer1 WWᵀ[%d][%d] = %v, want %v", i, j, s, want)
			}
		}
	}
	for _, b := range append(p.bias(0, 0), p.bias(0, 1)...) {
		if b != 0 {
			t.Fatal("bias not zero")
		}
	}
}

func TestLogSoftmax(t *testing.T) {
	logits := []float64{1, 2, 3, 4}
	mask := []bool{true, false, true, true}
	dst := make([]float64, 4)
	if err := LogSoftmax(logits, mask, dst); err != nil {
		t.Fatal(err)
	}
	lse := math.Log(math.E + math.Exp(3) + math.Exp(4))
	want := []float64{1 - lse, math.Inf(-1), 3 - lse, 4 - lse}
	for i := range want {
		if math.Abs(dst[i]-want[i]) > 1e-14 || (math.IsInf(want[i], -1) != math.IsInf(dst[i], -1)) {
			t.Errorf("logp[%d] = %v, want %v", i, dst[i], want[i])
		}
	}
	// nil mask = all legal; large logits stay finite (max subtraction).
	big := []float64{1000, 1001}
	if err := LogSoftmax(big, nil, dst[:2]); err != nil {
		t.Fatal(err)
	}
	if math.Abs(dst[1]-(-math.Log1p(math.Exp(-1)))) > 1e-12 {
		t.Errorf("logp = %v", dst[:2])
	}
	// In place.
	z := []float64{0, 0, 0}
	LogSoftmax(z, nil, z)
	if math.Abs(z[0]+math.Log(3)) > 1e-15 {
		t.Errorf("in-place logp = %v", z)
	}
	if err := LogSoftmax(logits, []bool{false, false, false, false}, dst); err == nil {
		t.Error("all-illegal mask: no error")
	}
	if err := LogSoftmax(logits, []bool{true}, dst); err == nil {
		t.Error("short mask: no error")
	}
	if err := LogSoftmax([]float64{math.NaN(), 0}, nil, dst[:2]); err == nil {
		t.Error("NaN logit: no error")
	}
	// An illegal NaN logit is ignored.
	if err := LogSoftmax([]float64{math.NaN(), 0}, []bool{false, true}, dst[:2]); err != nil || dst[1] != 0 {
		t.Errorf("masked NaN: %v %v", err, dst[:2])
	}
}

func TestLogProbsErrors(t *testing.T) {
	p := mustNew(t, Config{ObsSize: 3, NumDecisions: 2, NumAgents: 2, Shared: true})
	dst := make([]float64, 2)
	cases := map[string]error{
		"agent 2 out of range":   p.LogProbs(2, []float64{1, 2, 3}, nil, dst),
		"agent -1 out of range":  p.LogProbs(-1, []float64{1, 2, 3}, nil, dst),
		"has 2 features, want 3": p.LogProbs(0, []float64{1, 2}, nil, dst),
		"dst has length 1":       p.LogProbs(0, []float64{1, 2, 3}, nil, dst[:1]),
		"allows no decision":     p.LogProbs(0, []float64{1, 2, 3}, []bool{false, false}, dst),
	}
	for want, err := range cases {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want one mentioning %q", err, want)
		}
	}
	var ws Workspace
	if _, err := p.Forward(&ws, []int{0, 5}, [][]float64{{1, 2, 3}, {1, 2, 3}}); err == nil || !strings.Contains(err.Error(), "row 1") {
		t.Errorf("Forward bad agent: %v", err)
	}
	if _, err := p.Forward(&ws, []int{0}, [][]float64{{1, 2, 3}, {1, 2, 3}}); err == nil {
		t.Error("Forward length mismatch: no error")
	}
	q := p.Clone()
	p.Forward(&ws, []int{0}, [][]float64{{1, 2, 3}})
	if err := q.Backward(&ws, make([]float64, 2), make([]float64, q.NumParams())); err == nil {
		t.Error("Backward with another policy's workspace: no error")
	}
	if err := p.Backward(&ws, make([]float64, 3), make([]float64, p.NumParams())); err == nil {
		t.Error("Backward with wrong dLogits length: no error")
	}
}

// TestBatchedMatchesSingle checks that Forward on a mixed batch gives, row
// for row, bit-identical logits to LogProbs, for shared and per-agent
// networks and batch sizes that exercise every kernel edge.
func TestBatchedMatchesSingle(t *testing.T) {
	for _, shared := range []bool{true, false} {
		cfg := Config{ObsSize: 7, NumDecisions: 5, NumAgents: 3, Hidden: []int{9, 6}, Shared: shared, Seed: 11}
		p := mustNew(t, cfg)
		perturb(p, 5, 0.3)
		rng := rand.New(rand.NewPCG(9, 9))
		var ws Workspace
		for _, m := range []int{1, 2, 3, 5, 17} {
			agents := make([]int, m)
			obs := make([][]float64, m)
			for r := range obs {
				agents[r] = rng.IntN(3)
				obs[r] = randObs(rng, 7)
			}
			logits, err := p.Forward(&ws, agents, obs)
			if err != nil {
				t.Fatal(err)
			}
			lp := make([]float64, 5)
			bl := make([]float64, 5)
			for r := range obs {
				if err := p.LogProbs(agents[r], obs[r], nil, lp); err != nil {
					t.Fatal(err)
				}
				if err := LogSoftmax(logits[r*5:(r+1)*5], nil, bl); err != nil {
					t.Fatal(err)
				}
				for d := range lp {
					if lp[d] != bl[d] {
						t.Fatalf("shared=%v m=%d row %d: batched %v != single %v", shared, m, r, bl, lp)
					}
				}
			}
		}
	}
}

// TestPassesDoNotAllocate: once a Workspace has seen a batch size, the
// training passes (Forward, Backward) and the rollout path (LogProbs)
// allocate nothing, at the batch sizes troupe bench measures. (The bench's
// own allocation column counts the whole process during one timed call,
// so it is a report, not this check.)
func TestPassesDoNotAllocate(t *testing.T) {
	for _, shared := range []bool{true, false} {
		cfg := Config{ObsSize: 20, NumDecisions: 8, NumAgents: 5, Hidden: []int{64, 64}, Shared: shared, Seed: 1}
		p := mustNew(t, cfg)
		rng := rand.New(rand.NewPCG(1, 1))
		for _, m := range []int{1, 64, 1024} {
			agents := make([]int, m)
			obs := make([][]float64, m)
			for r := range obs {
				agents[r] = r % cfg.NumAgents
				obs[r] = randObs(rng, cfg.ObsSize)
			}
			dz := make([]float64, m*cfg.NumDecisions)
			for i := range dz {
				dz[i] = float64(i%5) * 0.01
			}
			grad := make([]float64, p.NumParams())
			var ws Workspace
			var err error
			pass := func() {
				if _, e := p.Forward(&ws, agents, obs); e != nil && err == nil {
					err = e
				}
				if e := p.Backward(&ws, dz, grad); e != nil && err == nil {
					err = e
				}
			}
			pass() // the Workspace grows to the batch
			if n := testing.AllocsPerRun(5, pass); n != 0 || err != nil {
				t.Errorf("shared=%v batch %d: forward+backward allocates %.0f times per call (err %v)", shared, m, n, err)
			}
		}
		lp := make([]float64, cfg.NumDecisions)
		o := randObs(rng, cfg.ObsSize)
		if n := testing.AllocsPerRun(100, func() { _ = p.LogProbs(1, o, nil, lp) }); n != 0 {
			t.Errorf("shared=%v: LogProbs allocates %.0f times per call", shared, n)
		}
	}
}

// reference forward pass written from the documented tensor layout only,
// as a Python user would with numpy.
func referenceLogits(t *testing.T, tensors map[string]safetensors.Tensor, cfg Config, agent int, obs []float64) []float64 {
	net := "shared"
	x := append([]float64{}, obs...)
	if cfg.Shared {
		oh := make([]float64, cfg.NumAgents)
		oh[agent] = 1
		x = append(x, oh...)
	} else {
		net = fmt.Sprintf("agent%d", agent)
	}
	for l := 0; l <= len(cfg.Hidden); l++ {
		wt := tensors[fmt.Sprintf("%s.layer%d.weight", net, l)]
		w, err := wt.Float64()
		if err != nil {
			t.Fatal(err)
		}
		b, err := tensors[fmt.Sprintf("%s.layer%d.bias", net, l)].Float64()
		if err != nil {
			t.Fatal(err)
		}
		out, in := wt.Shape[0], wt.Shape[1]
		y := make([]float64, out)
		for o := range y {
			y[o] = b[o]
			for i := 0; i < in; i++ {
				y[o] += w[o*in+i] * x[i]
			}
			if l < len(cfg.Hidden) {
				y[o] = math.Tanh(y[o])
			}
		}
		x = y
	}
	return x
}

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	for _, shared := range []bool{true, false} {
		cfg := Config{ObsSize: 4, NumDecisions: 3, NumAgents: 2, Hidden: []int{5, 6}, Shared: shared, Seed: 1}
		p := mustNew(t, cfg)
		perturb(p, 2, 0.5)
		path := filepath.Join(dir, fmt.Sprintf("policy-%v.safetensors", shared))
		if err := p.Save(path); err != nil {
			t.Fatal(err)
		}
		q, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if !q.cfg.SameArchitecture(p.cfg) || q.cfg.Seed != p.cfg.Seed {
			t.Errorf("config %+v, want %+v", q.cfg, p.cfg)
		}
		for i := range p.params {
			if p.params[i] != q.params[i] {
				t.Fatalf("param %d: %v != %v", i, q.params[i], p.params[i])
			}
		}
		// The file alone (documented names, shapes, activation) reproduces
		// the policy's logits.
		tensors, meta, err := safetensors.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if meta["activation"] != "tanh" || meta["format"] != FormatName {
			t.Errorf("metadata %v", meta)
		}
		wantNames := 2 * 3 * cfg.NumNets()
		if len(tensors) != wantNames {
			t.Errorf("%d tensors, want %d", len(tensors), wantNames)
		}
		w0 := tensors[cfg.NetName(0)+".layer0.weight"]
		if w0.DType != "F64" || len(w0.Shape) != 2 || w0.Shape[0] != 5 || w0.Shape[1] != cfg.InputSize() {
			t.Errorf("layer0 weight %s %v", w0.DType, w0.Shape)
		}
		rng := rand.New(rand.NewPCG(4, 4))
		lp := make([]float64, 3)
		for agent := 0; agent < 2; agent++ {
			obs := randObs(rng, 4)
			ref := referenceLogits(t, tensors, cfg, agent, obs)
			LogSoftmax(ref, nil, ref)
			q.LogProbs(agent, obs, nil, lp)
			for d := range lp {
				if math.Abs(lp[d]-ref[d]) > 1e-12 {
					t.Errorf("agent %d: logp %v, file-only reference %v", agent, lp, ref)
				}
			}
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	p := mustNew(t, Config{ObsSize: 2, NumDecisions: 2, NumAgents: 1, Hidden: []int{3}})
	tensors := map[string]safetensors.Tensor{}
	p.EncodeVector("", p.params, tensors)
	write := func(name string, ts map[string]safetensors.Tensor, meta map[string]string) string {
		path := filepath.Join(dir, name)
		if err := safetensors.WriteFile(path, ts, meta); err != nil {
			t.Fatal(err)
		}
		return path
	}
	clone := func() map[string]safetensors.Tensor {
		c := map[string]safetensors.Tensor{}
		for k, v := range tensors {
			c[k] = v
		}
		return c
	}
	meta := p.Metadata()
	missing := clone()
	delete(missing, "agent0.layer1.bias")
	wrongShape := clone()
	wrongShape["agent0.layer0.weight"] = safetensors.FromFloat64([]int{2, 3}, make([]float64, 6))
	extra := clone()
	extra["agent0.layer2.weight"] = safetensors.FromFloat64([]int{1}, []float64{1})
	badCfg := p.Metadata()
	badCfg["config"] = `{"obs_size":2,"num_decisions":2,"num_agents":1,"hiden":[3]}`
	badFormat := p.Metadata()
	badFormat["format"] = "other"
	cases := []struct {
		path, want string
	}{
		{write("missing.safetensors", missing, meta), `tensor "agent0.layer1.bias" missing`},
		{write("shape.safetensors", wrongShape, meta), "has shape [2 3], want [3 2]"},
		{write("extra.safetensors", extra, meta), `unexpected tensor "agent0.layer2.weight"`},
		{write("cfg.safetensors", tensors, badCfg), `unknown field "hiden"`},
		{write("fmt.safetensors", tensors, badFormat), `format is "other"`},
		{write("nometa.safetensors", tensors, nil), "format"},
	}
	for _, c := range cases {
		_, err := Load(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Load(%s): error %v, want one naming the file and mentioning %q", filepath.Base(c.path), err, c.want)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent.safetensors")); err == nil {
		t.Error("absent file: no error")
	}
}

// TestBackwardFiniteDifferences checks the batched backward pass against
// central finite differences of L = Σ_r Σ_d c_rd · z_rd(θ).
func TestBackwardFiniteDifferences(t *testing.T) {
	for _, cfg := range []Config{
		{ObsSize: 3, NumDecisions: 4, NumAgents: 2, Hidden: []int{5, 3}, Shared: true, Seed: 1},
		{ObsSize: 3, NumDecisions: 4, NumAgents: 3, Hidden: []int{4}, Shared: false, Seed: 2},
		{ObsSize: 3, NumDecisions: 2, NumAgents: 2, Shared: true, Seed: 3}, // linear
	} {
		p := mustNew(t, cfg)
		perturb(p, 7, 0.5)
		rng := rand.New(rand.NewPCG(3, 3))
		m := 7
		agents := make([]int, m)
		obs := make([][]float64, m)
		c := make([]float64, m*cfg.NumDecisions)
		for r := range obs {
			agents[r] = rng.IntN(cfg.NumAgents)
			obs[r] = randObs(rng, cfg.ObsSize)
		}
		for i := range c {
			c[i] = rng.NormFloat64()
		}
		loss := func() float64 {
			var ws Workspace
			z, err := p.Forward(&ws, agents, obs)
			if err != nil {
				t.Fatal(err)
			}
			var s float64
			for i := range z {
				s += c[i] * z[i]
			}
			return s
		}
		var ws Workspace
		if _, err := p.Forward(&ws, agents, obs); err != nil {
			t.Fatal(err)
		}
		grad := make([]float64, p.NumParams())
		if err := p.Backward(&ws, c, grad); err != nil {
			t.Fatal(err)
		}
		const h = 1e-6
		for i := range p.params {
			old := p.params[i]
			p.params[i] = old + h
			up := loss()
			p.params[i] = old - h
			down := loss()
			p.params[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-7*(1+math.Abs(fd)) {
				t.Errorf("%+v: param %d: backward %v, finite difference %v", cfg, i, grad[i], fd)
			}
		}
		// Backward accumulates.
		if err := p.Backward(&ws, c, grad); err != nil {
			t.Fatal(err)
		}
		g1 := make([]float64, p.NumParams())
		p.Backward(&ws, c, g1)
		for i := range grad {
			if math.Abs(grad[i]-2*g1[i]) > 1e-12*(1+math.Abs(grad[i])) {
				t.Fatalf("Backward does not accumulate: %v vs 2×%v", grad[i], g1[i])
			}
		}
	}
}

func TestConcurrentLogProbs(t *testing.T) {
	p := mustNew(t, Config{ObsSize: 8, NumDecisions: 4, NumAgents: 2, Hidden: []int{16}, Shared: true})
	perturb(p, 1, 0.3)
	rng := rand.New(rand.NewPCG(1, 1))
	obs := make([][]float64, 64)
	want := make([][]float64, 64)
	for i := range obs {
		obs[i] = randObs(rng, 8)
		want[i] = make([]float64, 4)
		p.LogProbs(i%2, obs[i], nil, want[i])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lp := make([]float64, 4)
			for rep := 0; rep < 50; rep++ {
				for i := range obs {
					p.LogProbs(i%2, obs[i], nil, lp)
					for d := range lp {
						if lp[d] != want[i][d] {
							errs <- fmt.Sprintf("goroutine %d row %d: %v != %v", g, i, lp, want[i])
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestSampleAndGreedy(t *testing.T) {
	probs := []float64{0.1, 0, 0.6, 0.3}
	logp := make([]float64, 4)
	for i, p := range probs {
		logp[i] = math.Log(p) // log 0 = −Inf: illegal
	}
	rng := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, 4)
	const n = 100000
	for i := 0; i < n; i++ {
		counts[Sample(logp, rng)]++
	}
	if counts[1] != 0 {
		t.Errorf("illegal decision drawn %d times", counts[1])
	}
	for i, p := range probs {
		f := float64(counts[i]) / n
		if math.Abs(f-p) > 4*math.Sqrt(p*(1-p)/n)+1e-9 {
			t.Errorf("decision %d drawn with frequency %v, want %v", i, f, p)
		}
	}
	if g := Greedy(logp); g != 2 {
		t.Errorf("Greedy = %d, want 2", g)
	}
	if g := Greedy([]float64{math.Inf(-1), -1, -1}); g != 1 {
		t.Errorf("Greedy with tie = %d, want 1 (lowest index)", g)
	}
	if g := Greedy([]float64{math.Inf(-1)}); g != -1 {
		t.Errorf("Greedy all illegal = %d", g)
	}
	if s := Sample([]float64{math.Inf(-1), 0}, rng); s != 1 {
		t.Errorf("Sample with one legal decision = %d", s)
	}
}

func TestAdamQuadratic(t *testing.T) {
	// Minimise f(θ) = Σ (θ_i − c_i)², ∇f = 2(θ − c).
	c := []float64{3, -2, 0.5}
	theta := []float64{0, 0, 0}
	a := NewAdam(3, 0.1)
	g := make([]float64, 3)
	grad := func() {
		for i := range g {
			g[i] = 2 * (theta[i] - c[i])
		}
	}
	grad()
	if err := a.Step(theta, g); err != nil {
		t.Fatal(err)
	}
	// With bias correction, the first step moves every coordinate by LR in
	// the direction of −sign(g) (up to ε).
	for i := range theta {
		want := 0.1 * math.Copysign(1, c[i])
		if math.Abs(theta[i]-want) > 1e-8 {
			t.Errorf("first step θ[%d] = %v, want %v", i, theta[i], want)
		}
	}
	for step := 0; step < 2000; step++ {
		grad()
		a.Step(theta, g)
	}
	for i := range theta {
		if math.Abs(theta[i]-c[i]) > 1e-3 {
			t.Errorf("θ[%d] = %v after 2000 steps, want %v", i, theta[i], c[i])
		}
	}
	if a.T != 2001 {
		t.Errorf("T = %d", a.T)
	}
	if err := a.Step(theta[:2], g); err == nil {
		t.Error("length mismatch: no error")
	}
}

func TestClipGradNorm(t *testing.T) {
	g := []float64{3, 4}
	if n := ClipGradNorm(g, 10); n != 5 || g[0] != 3 || g[1] != 4 {
		t.Errorf("below threshold: norm %v, g %v", n, g)
	}
	if n := ClipGradNorm(g, 1); n != 5 {
		t.Errorf("returned norm %v, want 5 (before clipping)", n)
	}
	if math.Abs(GradNorm(g)-1) > 1e-15 || math.Abs(g[0]-0.6) > 1e-15 || math.Abs(g[1]-0.8) > 1e-15 {
		t.Errorf("after clipping to 1: %v (norm %v)", g, GradNorm(g))
	}
	g = []float64{3, 4}
	if ClipGradNorm(g, 0); g[0] != 3 {
		t.Error("maxNorm 0 clipped")
	}
}

func TestCloneCopyFrom(t *testing.T) {
	cfg := Config{ObsSize: 2, NumDecisions: 2, NumAgents: 1, Hidden: []int{3}}
	p := mustNew(t, cfg)
	q := p.Clone()
	q.params[0] += 1
	if p.params[0] == q.params[0] {
		t.Error("Clone shares storage")
	}
	if err := p.CopyFrom(q); err != nil || p.params[0] != q.params[0] {
		t.Errorf("CopyFrom: %v", err)
	}
	cfg.Hidden = []int{4}
	r := mustNew(t, cfg)
	if err := p.CopyFrom(r); err == nil {
		t.Error("CopyFrom a different architecture: no error")
	}
	c := p.Config()
	c.Hidden[0] = 99
	if p.cfg.Hidden[0] != 3 {
		t.Error("Config() exposes internal Hidden slice")
	}
}

func Example() {
	p, err := New(Config{ObsSize: 4, NumDecisions: 3, NumAgents: 2, Hidden: []int{16}, Shared: true, Seed: 1})
	if err != nil {
		panic(err)
	}
	logp := make([]float64, 3)
	mask := []bool{true, false, true} // decision 1 is illegal now
	if err := p.LogProbs(0, []float64{0.1, 0.2, 0.3, 0.4}, mask, logp); err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	d := Sample(logp, rng)
	fmt.Println(d != 1, math.IsInf(logp[1], -1))
	dir, _ := os.MkdirTemp("", "policy")
	defer os.RemoveAll(dir)
	if err := p.Save(filepath.Join(dir, "policy.safetensors")); err != nil {
		panic(err)
	}
	q, err := Load(filepath.Join(dir, "policy.safetensors"))
	fmt.Println(q.NumParams(), err)
	// Output:
	// true true
	// 163 <nil>
}
