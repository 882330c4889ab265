package grpo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core/policy"
)

func newPolicy(t testing.TB, cfg policy.Config) *policy.Policy {
	t.Helper()
	p, err := policy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func perturb(p *policy.Policy, seed uint64, scale float64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	for i, v := range p.Params() {
		p.Params()[i] = v + scale*rng.NormFloat64()
	}
}

// randomBatch builds n decisions sampled from p, with random masks and
// advantages; LogpOld is the sampling log-probability.
func randomBatch(t testing.TB, p *policy.Policy, n int, seed uint64) []Decision {
	cfg := p.Config()
	rng := rand.New(rand.NewPCG(seed, 7))
	lp := make([]float64, cfg.NumDecisions)
	batch := make([]Decision, n)
	for i := range batch {
		obs := make([]float64, cfg.ObsSize)
		for j := range obs {
			obs[j] = rng.NormFloat64()
		}
		mask := make([]bool, cfg.NumDecisions)
		for j := range mask {
			mask[j] = rng.IntN(3) > 0
		}
		mask[rng.IntN(cfg.NumDecisions)] = true
		agent := rng.IntN(cfg.NumAgents)
		if err := p.LogProbs(agent, obs, mask, lp); err != nil {
			t.Fatal(err)
		}
		a := policy.Sample(lp, rng)
		batch[i] = Decision{Agent: agent, Obs: obs, Mask: mask, Action: a, LogpOld: lp[a], Advantage: rng.NormFloat64()}
	}
	return batch
}

func TestConfigValidate(t *testing.T) {
	d := DefaultConfig()
	if d != (Config{Clip: 0.2, ClipHigh: 0, KL: 0, Entropy: 0, LearningRate: 3e-3, MaxGradNorm: 1, Epochs: 4, Minibatches: 4, Baseline: BaselineMean, Scale: ScaleGroup}) {
		t.Errorf("DefaultConfig = %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]func(*Config){
		"clip: must be in (0, 1)":             func(c *Config) { c.Clip = 0 },
		"clip_high: must be ≥ 0":              func(c *Config) { c.ClipHigh = -0.1 },
		"kl: must be ≥ 0":                     func(c *Config) { c.KL = math.NaN() },
		"entropy: must be ≥ 0":                func(c *Config) { c.Entropy = -1 },
		"learning_rate":                       func(c *Config) { c.LearningRate = 0 },
		"max_grad_norm":                       func(c *Config) { c.MaxGradNorm = math.Inf(1) },
		"epochs: must be at least 1":          func(c *Config) { c.Epochs = 0 },
		"minibatches: must be at least 1":     func(c *Config) { c.Minibatches = -2 },
		"baseline: must be mean, rloo or max": func(c *Config) { c.Baseline = "median" },
		"scale: must be group, batch or none": func(c *Config) { c.Scale = "" },
	}
	p := newPolicy(t, policy.Config{ObsSize: 2, NumDecisions: 2, NumAgents: 1})
	for want, mutate := range bad {
		c := DefaultConfig()
		mutate(&c)
		if _, err := NewOptimizer(p, c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %+v: error %v, want %q", c, err, want)
		}
	}
}

// TestLossGradientFiniteDifferences checks the gradient of the full GRPO
// loss (clipping active on some decisions, KL > 0, entropy > 0, masks, a
// one-legal-decision row) against central finite differences.
func TestLossGradientFiniteDifferences(t *testing.T) {
	for _, shared := range []bool{true, false} {
		pcfg := policy.Config{ObsSize: 3, NumDecisions: 4, NumAgents: 2, Hidden: []int{4}, Shared: shared, Seed: 5}
		p := newPolicy(t, pcfg)
		perturb(p, 1, 0.6)
		cfg := DefaultConfig()
		cfg.KL, cfg.Entropy, cfg.ClipHigh = 0.3, 0.05, 0.28
		o, err := NewOptimizer(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		perturb(o.ref, 2, 0.4) // π_ref ≠ π_θ so the KL term is live
		batch := randomBatch(t, p, 16, 3)
		// Move LogpOld so that ρ lands well inside or well outside the clip
		// range: offsets ±0.6 give ρ ≈ 0.55 or 1.8, ±0.05 give ρ ≈ 0.95 or 1.05.
		offsets := []float64{0.6, -0.6, 0.05, -0.05}
		for i := range batch {
			batch[i].LogpOld -= offsets[i%4]
			if i%3 == 0 {
				batch[i].Advantage = -batch[i].Advantage
			}
		}
		// A decision with a single legal choice.
		batch[5].Mask = []bool{false, false, true, false}
		batch[5].Action = 2
		batch[5].LogpOld = 0
		if err := o.referenceLogProbs(batch); err != nil {
			t.Fatal(err)
		}
		rows := make([]int, len(batch))
		for i := range rows {
			rows[i] = i
		}
		inv := 1 / float64(len(rows))
		grad := make([]float64, p.NumParams())
		_, _, _, clipped, err := o.lossAndGrad(batch, rows, grad)
		if err != nil {
			t.Fatal(err)
		}
		if clipped == 0 || clipped == len(rows) {
			t.Fatalf("clipped %d of %d: want a mix", clipped, len(rows))
		}
		lossAt := func() float64 {
			g := make([]float64, p.NumParams())
			l, _, _, _, err := o.lossAndGrad(batch, rows, g)
			if err != nil {
				t.Fatal(err)
			}
			return l * inv
		}
		const h = 1e-6
		params := p.Params()
		for i := range params {
			old := params[i]
			params[i] = old + h
			up := lossAt()
			params[i] = old - h
			down := lossAt()
			params[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-7*(1+math.Abs(fd)) {
				t.Errorf("shared=%v param %d: gradient %v, finite difference %v", shared, i, grad[i], fd)
			}
		}
	}
}

// TestDecisionLossTerms checks one decision's loss against the formula.
func TestDecisionLossTerms(t *testing.T) {
	p := newPolicy(t, policy.Config{ObsSize: 1, NumDecisions: 3, NumAgents: 1})
	cfg := DefaultConfig()
	cfg.KL, cfg.Entropy = 0.5, 0.1
	o, _ := NewOptimizer(p, cfg)
	lp := []float64{math.Log(0.5), math.Log(0.3), math.Log(0.2)}
	H := -(0.5*math.Log(0.5) + 0.3*math.Log(0.3) + 0.2*math.Log(0.2))
	dz := make([]float64, 3)
	refLp := math.Log(0.4)
	r := 0.4 / 0.3
	k3want := r - math.Log(r) - 1
	// ρ = 0.3/0.2 = 1.5 > 1.2 with A > 0: clipped, surrogate −1.2·A.
	d := Decision{Action: 1, LogpOld: math.Log(0.2), Advantage: 2}
	loss, k3, ent, clipped := o.decisionLoss(&d, lp, refLp, 1, dz)
	if !clipped || math.Abs(k3-k3want) > 1e-12 || math.Abs(ent-H) > 1e-12 {
		t.Errorf("clipped=%v k3=%v (want %v) H=%v (want %v)", clipped, k3, k3want, ent, H)
	}
	if want := -1.2*2 + 0.5*k3want - 0.1*H; math.Abs(loss-want) > 1e-12 {
		t.Errorf("loss %v, want %v", loss, want)
	}
	// Same ρ with A < 0: not clipped, surrogate −ρA = 1.5·2.
	d.Advantage = -2
	loss, _, _, clipped = o.decisionLoss(&d, lp, refLp, 1, dz)
	if clipped || math.Abs(loss-(3+0.5*k3want-0.1*H)) > 1e-12 {
		t.Errorf("A<0: clipped=%v loss %v", clipped, loss)
	}
	// Gradients sum to zero over the logits (softmax invariance).
	if s := dz[0] + dz[1] + dz[2]; math.Abs(s) > 1e-12 {
		t.Errorf("Σ dz = %v", s)
	}
}

func TestUpdateDeterministicAcrossGOMAXPROCS(t *testing.T) {
	pcfg := policy.Config{ObsSize: 6, NumDecisions: 5, NumAgents: 3, Hidden: []int{8}, Shared: false, Seed: 9}
	base := newPolicy(t, pcfg)
	batch := randomBatch(t, base, 1500, 4) // minibatches of 375 rows: 5 shards
	cfg := DefaultConfig()
	cfg.KL, cfg.Entropy = 0.1, 0.01
	run := func(procs int) ([]float64, Stats) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		p := base.Clone()
		o, err := NewOptimizer(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		var st Stats
		for it := 0; it < 2; it++ {
			if st, err = o.Update(batch, rng); err != nil {
				t.Fatal(err)
			}
		}
		return append([]float64(nil), p.Params()...), st
	}
	want, wantSt := run(1)
	for _, procs := range []int{2, 3, 8} {
		got, st := run(procs)
		if st != wantSt {
			t.Errorf("GOMAXPROCS=%d: stats %+v, want %+v", procs, st, wantSt)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("GOMAXPROCS=%d: param %d = %v, want %v (bitwise)", procs, i, got[i], want[i])
			}
		}
	}
	if wantSt.Steps != 16 || wantSt.KL <= 0 || wantSt.Entropy <= 0 || wantSt.GradNorm <= 0 {
		t.Errorf("stats %+v", wantSt)
	}
}

func TestSaveLoadResumeExact(t *testing.T) {
	pcfg := policy.Config{ObsSize: 4, NumDecisions: 3, NumAgents: 2, Hidden: []int{6, 5}, Shared: true, Seed: 3}
	cfg := DefaultConfig()
	cfg.KL = 0.2
	batches := [][]Decision{}
	{
		p := newPolicy(t, pcfg)
		for i := 0; i < 3; i++ {
			batches = append(batches, randomBatch(t, p, 200, uint64(10+i)))
		}
	}
	// Uninterrupted run.
	p1 := newPolicy(t, pcfg)
	o1, _ := NewOptimizer(p1, cfg)
	rng1 := rand.New(rand.NewPCG(5, 6))
	var stats1 []Stats
	for _, b := range batches {
		st, err := o1.Update(b, rng1)
		if err != nil {
			t.Fatal(err)
		}
		stats1 = append(stats1, st)
	}
	// Interrupted after the first batch: save, then resume into a fresh
	// optimizer around a differently initialised policy.
	p2 := newPolicy(t, pcfg)
	o2, _ := NewOptimizer(p2, cfg)
	pcg := rand.NewPCG(5, 6)
	rng2 := rand.New(pcg)
	if _, err := o2.Update(batches[0], rng2); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	if err := o2.Save(path); err != nil {
		t.Fatal(err)
	}
	rngState, _ := pcg.MarshalBinary()

	pcfg3 := pcfg
	pcfg3.Seed = 99
	p3 := newPolicy(t, pcfg3)
	o3, _ := NewOptimizer(p3, cfg)
	if err := o3.Load(path); err != nil {
		t.Fatal(err)
	}
	pcg3 := rand.NewPCG(0, 0)
	pcg3.UnmarshalBinary(rngState)
	rng3 := rand.New(pcg3)
	for i, b := range batches[1:] {
		st, err := o3.Update(b, rng3)
		if err != nil {
			t.Fatal(err)
		}
		if st != stats1[i+1] {
			t.Errorf("batch %d: resumed stats %+v, uninterrupted %+v", i+1, st, stats1[i+1])
		}
	}
	eq := func(name string, a, b []float64) {
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s[%d]: resumed %v, uninterrupted %v", name, i, b[i], a[i])
			}
		}
	}
	eq("policy", p1.Params(), p3.Params())
	eq("reference", o1.ref.Params(), o3.ref.Params())
	eq("adam.m", o1.adam.M, o3.adam.M)
	eq("adam.v", o1.adam.V, o3.adam.V)
	if o1.adam.T != o3.adam.T || o3.adam.T != 48 {
		t.Errorf("steps %d vs %d", o1.adam.T, o3.adam.T)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	p := newPolicy(t, policy.Config{ObsSize: 2, NumDecisions: 2, NumAgents: 1, Hidden: []int{3}})
	o, _ := NewOptimizer(p, DefaultConfig())
	ck := filepath.Join(dir, "ck.safetensors")
	if err := o.Save(ck); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.safetensors")
	p.Save(pol)
	other := newPolicy(t, policy.Config{ObsSize: 2, NumDecisions: 2, NumAgents: 1, Hidden: []int{4}})
	oo, _ := NewOptimizer(other, DefaultConfig())
	before := append([]float64(nil), other.Params()...)
	if err := oo.Load(ck); err == nil || !strings.Contains(err.Error(), "does not match") || !strings.Contains(err.Error(), ck) {
		t.Errorf("architecture mismatch: %v", err)
	}
	if err := o.Load(pol); err == nil || !strings.Contains(err.Error(), "not an optimizer checkpoint") {
		t.Errorf("policy file as checkpoint: %v", err)
	}
	for i := range before {
		if other.Params()[i] != before[i] {
			t.Fatal("failed Load changed the policy")
		}
	}
}

func TestUpdateRejectsBadDecisions(t *testing.T) {
	p := newPolicy(t, policy.Config{ObsSize: 2, NumDecisions: 3, NumAgents: 2})
	o, _ := NewOptimizer(p, DefaultConfig())
	good := Decision{Agent: 1, Obs: []float64{1, 2}, Mask: []bool{true, true, false}, Action: 0, LogpOld: math.Log(0.5), Advantage: 1}
	rng := rand.New(rand.NewPCG(1, 1))
	cases := map[string]func(*Decision){
		"agent 2 out of range":       func(d *Decision) { d.Agent = 2 },
		"observation has 1 features": func(d *Decision) { d.Obs = []float64{1} },
		"mask has length 2":          func(d *Decision) { d.Mask = []bool{true, true} },
		"action 3 out of range":      func(d *Decision) { d.Action = 3 },
		"action 2 is illegal":        func(d *Decision) { d.Action = 2 },
		"logp_old NaN":               func(d *Decision) { d.LogpOld = math.NaN() },
		"logp_old 0.5":               func(d *Decision) { d.LogpOld = 0.5 },
		"advantage is +Inf":          func(d *Decision) { d.Advantage = math.Inf(1) },
		"feature 1 is NaN":           func(d *Decision) { d.Obs = []float64{0, math.NaN()} },
	}
	for want, mutate := range cases {
		d := good
		mutate(&d)
		_, err := o.Update([]Decision{good, d}, rng)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "decision 1") {
			t.Errorf("error %v, want one naming decision 1 and %q", err, want)
		}
	}
	if _, err := o.Update(nil, rng); err == nil {
		t.Error("empty batch: no error")
	}
	if _, err := o.Update([]Decision{good}, nil); err == nil {
		t.Error("nil rng: no error")
	}
}

// TestSingleLegalDecisions: decisions with one legal choice carry no
// gradient and leave the policy unchanged.
func TestSingleLegalDecisions(t *testing.T) {
	p := newPolicy(t, policy.Config{ObsSize: 2, NumDecisions: 3, NumAgents: 1, Hidden: []int{4}})
	before := append([]float64(nil), p.Params()...)
	cfg := DefaultConfig()
	cfg.KL, cfg.Entropy = 0.1, 0.1
	o, _ := NewOptimizer(p, cfg)
	batch := []Decision{
		{Obs: []float64{1, 0}, Mask: []bool{false, true, false}, Action: 1, LogpOld: 0, Advantage: 3},
		{Obs: []float64{0, 1}, Mask: []bool{true, false, false}, Action: 0, LogpOld: 0, Advantage: -1},
	}
	st, err := o.Update(batch, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if st.GradNorm != 0 || st.Entropy != 0 || st.KL != 0 || st.ClipFrac != 0 {
		t.Errorf("stats %+v", st)
	}
	for i := range before {
		if p.Params()[i] != before[i] {
			t.Fatalf("param %d changed", i)
		}
	}
}

// TestBanditLearns: one state, four decisions (one always illegal); picking
// decision 2 pays 1, the others 0. GRPO must make decision 2 the greedy one.
// A second, shared-policy case needs different best decisions per agent.
func TestBanditLearns(t *testing.T) {
	for _, agents := range []int{1, 2} {
		p := newPolicy(t, policy.Config{ObsSize: 2, NumDecisions: 4, NumAgents: agents, Hidden: []int{8}, Shared: true, Seed: 1})
		cfg := DefaultConfig()
		cfg.LearningRate = 0.02
		o, _ := NewOptimizer(p, cfg)
		rng := rand.New(rand.NewPCG(2, 3))
		obs := []float64{1, -1}
		mask := []bool{true, true, true, false}
		best := []int{2, 0} // agent i's best decision
		lp := make([]float64, 4)
		var last Stats
		for it := 0; it < 30; it++ {
			var batch []Decision
			var rewards [][]float64
			var idx [][]int
			for g := 0; g < 8; g++ { // 8 tasks × 8 rollouts
				var rs []float64
				var ids []int
				for k := 0; k < 8; k++ {
					var r float64
					for a := 0; a < agents; a++ {
						p.LogProbs(a, obs, mask, lp)
						d := policy.Sample(lp, rng)
						if d == best[a] {
							r++
						}
						ids = append(ids, len(batch))
						batch = append(batch, Decision{Agent: a, Obs: obs, Mask: mask, Action: d, LogpOld: lp[d]})
					}
					rs = append(rs, r)
				}
				rewards = append(rewards, rs)
				idx = append(idx, ids)
			}
			adv, _, err := GroupAdvantages(rewards, "mean", "group")
			if err != nil {
				t.Fatal(err)
			}
			for g := range idx {
				for j, id := range idx[g] {
					batch[id].Advantage = adv[g][j/agents] // joint credit
				}
			}
			if last, err = o.Update(batch, rng); err != nil {
				t.Fatal(err)
			}
		}
		for a := 0; a < agents; a++ {
			p.LogProbs(a, obs, mask, lp)
			if g := policy.Greedy(lp); g != best[a] || math.Exp(lp[best[a]]) < 0.8 {
				t.Errorf("%d agents: agent %d greedy %d (p=%v), want %d with p ≥ 0.8; last stats %+v",
					agents, a, g, math.Exp(lp[best[a]]), best[a], last)
			}
			if !math.IsInf(lp[3], -1) {
				t.Errorf("illegal decision has log-prob %v", lp[3])
			}
		}
	}
}

func Example() {
	p, _ := policy.New(policy.Config{ObsSize: 1, NumDecisions: 2, NumAgents: 1, Hidden: []int{4}, Seed: 1})
	opt, _ := NewOptimizer(p, DefaultConfig())
	rng := rand.New(rand.NewPCG(1, 1))
	lp := make([]float64, 2)
	for it := 0; it < 20; it++ {
		// One task, a group of 8 rollouts of one decision; decision 1 pays.
		var batch []Decision
		rewards := make([]float64, 8)
		for g := range rewards {
			p.LogProbs(0, []float64{1}, nil, lp)
			d := policy.Sample(lp, rng)
			rewards[g] = float64(d)
			batch = append(batch, Decision{Obs: []float64{1}, Action: d, LogpOld: lp[d]})
		}
		adv, _, _ := GroupAdvantages([][]float64{rewards}, "mean", "group")
		for g := range batch {
			batch[g].Advantage = adv[0][g]
		}
		if _, err := opt.Update(batch, rng); err != nil {
			panic(err)
		}
	}
	p.LogProbs(0, []float64{1}, nil, lp)
	fmt.Println("greedy decision:", policy.Greedy(lp))
	// Output: greedy decision: 1
}

func TestLearningRate(t *testing.T) {
	p := newPolicy(t, policy.Config{ObsSize: 1, NumDecisions: 2, NumAgents: 1})
	cfg := DefaultConfig()
	cfg.LearningRate = 0
	if _, err := NewOptimizer(p, cfg); err == nil {
		t.Error("lr 0: no error")
	}
	cfg.LearningRate = 0.5
	o, err := NewOptimizer(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// First Adam step moves each parameter with a non-zero gradient by ≈ lr.
	before := append([]float64(nil), p.Params()...)
	batch := []Decision{{Obs: []float64{1}, Action: 0, LogpOld: math.Log(0.5), Advantage: 1}}
	if _, err := o.Update(batch, rand.New(rand.NewPCG(1, 1))); err != nil {
		t.Fatal(err)
	}
	moved := math.Abs(p.Params()[0] - before[0])
	if moved < 0.4 {
		t.Errorf("parameter moved %v after steps with lr 0.5", moved)
	}
}

// TestOptimizerMethods keeps the optimizer's exported methods to what the
// trainer uses (and Policy): the learning rate is a Config setting with
// its one rule, and the reference policy is frozen for the run.
func TestOptimizerMethods(t *testing.T) {
	var got []string
	typ := reflect.TypeFor[*Optimizer]()
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	if want := []string{"Config", "Load", "Policy", "Save", "Update"}; !slices.Equal(got, want) {
		t.Errorf("exported methods %v, want %v", got, want)
	}
}
