package lbf

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// rawEnv returns an env with raw (integer) features and the given overrides.
func rawEnv(t testing.TB, params map[string]any) *Env {
	t.Helper()
	all := map[string]any{"raw_obs": true}
	for k, v := range params {
		all[k] = v
	}
	e, err := New(all)
	if err != nil {
		t.Fatalf("New(%v): %v", all, err)
	}
	return e
}

func layout(t *testing.T, e *Env, players, foods [][3]int) {
	t.Helper()
	if err := e.setLayout(players, foods); err != nil {
		t.Fatal(err)
	}
}

func step(t *testing.T, e *Env, decisions ...int) core.StepResult {
	t.Helper()
	acts := make([]core.Action, len(decisions))
	for i, d := range decisions {
		acts[i].Decision = d
	}
	res, err := e.Step(acts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func positions(e *Env) [][2]int {
	out := make([][2]int, len(e.players))
	for i, p := range e.players {
		out[i] = [2]int{p.r, p.c}
	}
	return out
}

func wantPositions(t *testing.T, e *Env, want ...[2]int) {
	t.Helper()
	if got := positions(e); !reflect.DeepEqual(got, want) {
		t.Errorf("positions %v, want %v", got, want)
	}
}

func TestMovement(t *testing.T) {
	e := rawEnv(t, nil)
	layout(t, e, [][3]int{{3, 3, 1}, {6, 6, 1}}, [][3]int{{1, 1, 2}})
	step(t, e, North, South)
	wantPositions(t, e, [2]int{2, 3}, [2]int{7, 6})
	step(t, e, West, East)
	wantPositions(t, e, [2]int{2, 2}, [2]int{7, 7})
	step(t, e, None, Load) // LOAD with no food adjacent is illegal: played as NONE
	wantPositions(t, e, [2]int{2, 2}, [2]int{7, 7})
}

func TestBlockedMovesAndMask(t *testing.T) {
	e := rawEnv(t, nil)
	// p0 in the corner, p1 to its east, food south of p1.
	layout(t, e, [][3]int{{0, 0, 1}, {0, 1, 1}}, [][3]int{{1, 1, 2}})
	obs := e.observations(make([]float64, 2*e.obsSize), 2)
	//                       none  north  south  west   east   load
	want0 := []bool{true, false, true, false, false, false} // east is p1's cell
	want1 := []bool{true, false, false, false, true, true}  // south is food, west is p0
	if !reflect.DeepEqual(obs[0].Mask, want0) || !reflect.DeepEqual(obs[1].Mask, want1) {
		t.Fatalf("masks %v %v, want %v %v", obs[0].Mask, obs[1].Mask, want0, want1)
	}
	// Off the grid, into food, into a player: all played as NONE.
	step(t, e, North, South)
	wantPositions(t, e, [2]int{0, 0}, [2]int{0, 1})
	step(t, e, West, West)
	wantPositions(t, e, [2]int{0, 0}, [2]int{0, 1})
	// Moving into a cell its occupant leaves in the same step is illegal too.
	step(t, e, East, East)
	wantPositions(t, e, [2]int{0, 0}, [2]int{0, 2})
	// LOAD needs food north, south, west or east: p0 at (1,0) has it,
	// p1 at (0,2) is only diagonal to the food at (1,1).
	step(t, e, South, None)
	res := step(t, e, None, None)
	if !res.Observations[0].Mask[Load] || res.Observations[1].Mask[Load] {
		t.Errorf("load mask p0 at (1,0)=%v (want true), p1 at (0,2)=%v (want false: diagonal)",
			res.Observations[0].Mask[Load], res.Observations[1].Mask[Load])
	}
}

func TestCollision(t *testing.T) {
	e := rawEnv(t, map[string]any{"players": 3})
	layout(t, e, [][3]int{{2, 2, 1}, {2, 4, 1}, {5, 5, 1}}, [][3]int{{6, 1, 3}})
	step(t, e, East, West, North) // p0 and p1 both head for (2,3)
	wantPositions(t, e, [2]int{2, 2}, [2]int{2, 4}, [2]int{4, 5})
	step(t, e, South, South, None) // different targets: both move
	wantPositions(t, e, [2]int{3, 2}, [2]int{3, 4}, [2]int{4, 5})
	step(t, e, None, South, West) // p1 (3,4)->(4,4) and p2 (4,5)->(4,4) collide
	wantPositions(t, e, [2]int{3, 2}, [2]int{3, 4}, [2]int{4, 5})
}

func TestLoading(t *testing.T) {
	t.Run("insufficient alone", func(t *testing.T) {
		e := rawEnv(t, nil)
		layout(t, e, [][3]int{{2, 3, 1}, {6, 6, 2}}, [][3]int{{3, 3, 3}, {5, 1, 3}})
		res := step(t, e, Load, None)
		if res.Rewards[0] != 0 || res.Rewards[1] != 0 || !e.foods[0].alive || res.Done() {
			t.Errorf("level-1 loader on level-3 food: rewards %v, food alive %v", res.Rewards, e.foods[0].alive)
		}
	})
	t.Run("insufficient together", func(t *testing.T) {
		e := rawEnv(t, nil)
		layout(t, e, [][3]int{{2, 3, 1}, {3, 4, 1}}, [][3]int{{3, 3, 3}, {5, 1, 3}})
		res := step(t, e, Load, Load)
		if res.Rewards[0] != 0 || res.Rewards[1] != 0 || !e.foods[0].alive {
			t.Errorf("levels 1+1 on level-3 food: rewards %v, food alive %v", res.Rewards, e.foods[0].alive)
		}
	})
	t.Run("adjacent but not loading", func(t *testing.T) {
		e := rawEnv(t, nil)
		layout(t, e, [][3]int{{2, 3, 1}, {3, 4, 2}}, [][3]int{{3, 3, 3}, {5, 1, 3}})
		res := step(t, e, Load, None)
		if res.Rewards[0] != 0 || !e.foods[0].alive {
			t.Errorf("only p0 loads: rewards %v, food alive %v", res.Rewards, e.foods[0].alive)
		}
	})
	t.Run("sufficient: reward split by level", func(t *testing.T) {
		e := rawEnv(t, nil)
		layout(t, e, [][3]int{{2, 3, 1}, {3, 4, 2}}, [][3]int{{3, 3, 3}, {5, 1, 3}})
		res := step(t, e, Load, Load)
		// level_i·3 / (3 · (3+3))
		want := []float64{1.0 / 6, 2.0 / 6}
		if !approxEq(res.Rewards, want) || e.foods[0].alive || e.collected != 1 || res.Done() {
			t.Errorf("rewards %v (want %v), food alive %v, collected %d, done %v",
				res.Rewards, want, e.foods[0].alive, e.collected, res.Done())
		}
		if res.Observations[0].Mask[Load] || !res.Observations[0].Mask[South] {
			t.Errorf("after collection p0's mask %v: want load illegal, south legal", res.Observations[0].Mask)
		}
	})
	t.Run("more level than needed", func(t *testing.T) {
		e := rawEnv(t, map[string]any{"coop": false})
		layout(t, e, [][3]int{{2, 3, 2}, {3, 4, 2}}, [][3]int{{3, 3, 3}, {5, 1, 1}})
		res := step(t, e, Load, Load)
		want := []float64{2.0 * 3 / (4 * 4), 2.0 * 3 / (4 * 4)}
		if !approxEq(res.Rewards, want) {
			t.Errorf("rewards %v, want %v", res.Rewards, want)
		}
	})
	t.Run("separate foods, separate groups", func(t *testing.T) {
		e := rawEnv(t, map[string]any{"coop": false})
		layout(t, e, [][3]int{{2, 3, 1}, {5, 2, 2}}, [][3]int{{3, 3, 1}, {5, 1, 2}})
		res := step(t, e, Load, Load)
		// Each collects its own food alone: level·food/(level·3).
		want := []float64{1.0 / 3, 2.0 / 3}
		if !approxEq(res.Rewards, want) || !res.Terminated {
			t.Errorf("rewards %v (want %v), terminated %v", res.Rewards, want, res.Terminated)
		}
	})
}

func TestTermination(t *testing.T) {
	e := rawEnv(t, nil)
	layout(t, e, [][3]int{{2, 3, 1}, {3, 4, 2}}, [][3]int{{3, 3, 3}, {6, 5, 3}})
	step(t, e, Load, Load)
	step(t, e, East, South) // p0 (2,4); p1 (4,4)
	step(t, e, None, South) // p1 (5,4)
	step(t, e, None, South) // p1 (6,4): west of food (6,5)
	step(t, e, None, East)  // blocked by food: stays
	if got := positions(e)[1]; got != [2]int{6, 4} {
		t.Fatalf("p1 at %v, want (6,4)", got)
	}
	res := step(t, e, None, Load) // level 2 < 3
	if res.Done() {
		t.Fatal("done although a food is left")
	}
	// p0 walks to (5,5), north of the food: (2,4)->(2,5)->(3,5)->(4,5)->(5,5).
	for _, d := range []int{East, South, South, South} {
		step(t, e, d, None)
	}
	res = step(t, e, Load, Load)
	if !res.Terminated || res.Truncated {
		t.Fatalf("terminated %v truncated %v after the last food", res.Terminated, res.Truncated)
	}
	want := map[string]float64{
		core.MetricReturn: 1, MetricFoodsCollected: 2, metricFoodsSpawned: 2, core.MetricMakespan: 11,
		core.MetricReferenceMakespan: 50, core.MetricTokens: 0, core.MetricReferenceTokens: 0,
	}
	for k, v := range want {
		if got := res.Metrics[k]; math.Abs(got-v) > 1e-12 {
			t.Errorf("metric %s = %v, want %v", k, got, v)
		}
	}
	if len(res.Metrics) != len(e.Spec().Metrics) {
		t.Errorf("metrics %v, spec lists %v", res.Metrics, e.Spec().Metrics)
	}
	if _, err := e.Step(make([]core.Action, 2)); err == nil {
		t.Error("Step after termination: want error")
	}
}

func TestTruncation(t *testing.T) {
	e := rawEnv(t, map[string]any{"max_steps": 3})
	layout(t, e, [][3]int{{0, 0, 1}, {7, 7, 1}}, [][3]int{{3, 3, 2}})
	for i := 1; i <= 3; i++ {
		res := step(t, e, None, None)
		if res.Terminated || res.Truncated != (i == 3) || (res.Metrics != nil) != (i == 3) {
			t.Fatalf("step %d: terminated %v truncated %v metrics %v", i, res.Terminated, res.Truncated, res.Metrics)
		}
		if i == 3 && (res.Metrics[core.MetricMakespan] != 3 || res.Metrics[core.MetricReturn] != 0 || res.Metrics[core.MetricReferenceMakespan] != 3) {
			t.Errorf("metrics %v", res.Metrics)
		}
	}
}

func TestObservationLayout(t *testing.T) {
	e := rawEnv(t, map[string]any{"players": 3, "foods": 3})
	// Foods listed out of row-major order; p1 and p2 levels differ.
	layout(t, e, [][3]int{{0, 0, 1}, {7, 2, 2}, {4, 6, 1}},
		[][3]int{{5, 5, 4}, {1, 4, 4}, {1, 1, 4}})
	obs := e.observations(make([]float64, 3*e.obsSize), 3)
	foods := []float64{1, 1, 4, 1, 4, 4, 5, 5, 4} // row-major
	want := [][]float64{
		append(append([]float64{}, foods...), 0, 0, 1, 7, 2, 2, 4, 6, 1),
		append(append([]float64{}, foods...), 7, 2, 2, 0, 0, 1, 4, 6, 1),
		append(append([]float64{}, foods...), 4, 6, 1, 0, 0, 1, 7, 2, 2),
	}
	for i := range want {
		if !reflect.DeepEqual(obs[i].Features, want[i]) {
			t.Errorf("agent %d features\n got %v\nwant %v", i, obs[i].Features, want[i])
		}
	}
	// Collected food leaves the list; the rest shift up and (-1,-1,0) pads.
	e.foods[2].alive = false
	e.foodAt[1*8+1] = 0
	e.fillFeatures(0, obs[0].Features)
	wantF := []float64{1, 4, 4, 5, 5, 4, -1, -1, 0}
	if got := obs[0].Features[:9]; !reflect.DeepEqual(got, wantF) {
		t.Errorf("after collecting (1,1): foods %v, want %v", got, wantF)
	}
	st := e.State()
	wantS := []float64{5, 5, 4, 1, 4, 4, -1, -1, 0, 0, 0, 1, 7, 2, 2, 4, 6, 1, 0}
	if !reflect.DeepEqual(st, wantS) {
		t.Errorf("state\n got %v\nwant %v", st, wantS)
	}
}

func TestPartialSight(t *testing.T) {
	e := rawEnv(t, map[string]any{"sight": 1, "players": 3})
	layout(t, e, [][3]int{{0, 0, 1}, {2, 2, 2}, {4, 4, 1}}, [][3]int{{1, 1, 3}, {5, 5, 3}})
	obs := e.observations(make([]float64, 3*e.obsSize), 3)
	want := [][]float64{
		// p0 at (0,0): window rows/cols 0..1; p1 at window (2,2) ≤ 2·sight: seen
		// (lbforaging's check), food (1,1) seen, food (5,5) not.
		{1, 1, 3, -1, -1, 0, 0, 0, 1, 2, 2, 2, -1, -1, 0},
		// p1 at (2,2): window starts (1,1): sees food (1,1) at (0,0), p0 at
		// (-1,-1) unseen, p2 at (3,3) > 2: unseen.
		{0, 0, 3, -1, -1, 0, 1, 1, 2, -1, -1, 0, -1, -1, 0},
		// p2 at (4,4): window starts (3,3): food (5,5) at (2,2).
		{2, 2, 3, -1, -1, 0, 1, 1, 1, -1, -1, 0, -1, -1, 0},
	}
	for i := range want {
		if !reflect.DeepEqual(obs[i].Features, want[i]) {
			t.Errorf("agent %d features\n got %v\nwant %v", i, obs[i].Features, want[i])
		}
	}
}

func TestScaledFeatures(t *testing.T) {
	e, err := New(nil) // 8x8-2p-2f-coop, scaled
	if err != nil {
		t.Fatal(err)
	}
	layout(t, e, [][3]int{{0, 7, 1}, {7, 0, 2}}, [][3]int{{3, 3, 3}})
	obs := e.observations(make([]float64, 2*e.obsSize), 2)
	// coordinates ÷ 7, levels ÷ (2·2)
	want := []float64{3.0 / 7, 3.0 / 7, 3.0 / 4, -1, -1, 0, 0, 1, 1.0 / 4, 1, 0, 2.0 / 4}
	if !closeTol(obs[0].Features, want, 1e-15) {
		t.Errorf("scaled features %v, want %v", obs[0].Features, want)
	}
	if s := e.State(); len(s) != e.Spec().StateSize || s[len(s)-1] != 0 {
		t.Errorf("state %v", s)
	}
}

func TestSeedsReproduce(t *testing.T) {
	run := func(seed uint64) []core.StepResult {
		e, err := New(nil)
		if err != nil {
			t.Fatal(err)
		}
		obs, err := e.Reset(seed)
		if err != nil {
			t.Fatal(err)
		}
		out := []core.StepResult{{Observations: obs}}
		pick := rand.New(rand.NewPCG(99, 1))
		for !out[len(out)-1].Done() {
			res, err := e.Step(randomActions(pick, out[len(out)-1].Observations))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res)
		}
		return out
	}
	a, b := run(42), run(42)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed and actions gave different trajectories")
	}
	// Re-resetting one instance reproduces too, and other seeds differ.
	e, _ := New(nil)
	first, _ := e.Reset(5)
	e.Reset(6)
	again, _ := e.Reset(5)
	if !reflect.DeepEqual(first, again) {
		t.Error("Reset(5) twice on one instance differs")
	}
	distinct := map[string]bool{}
	for seed := range uint64(20) {
		obs, _ := e.Reset(seed)
		distinct[fmt.Sprint(obs[0].Features)] = true
	}
	if len(distinct) < 15 {
		t.Errorf("20 seeds gave only %d distinct initial observations", len(distinct))
	}
}

func randomActions(r *rand.Rand, obs []core.Observation) []core.Action {
	acts := make([]core.Action, len(obs))
	for i, o := range obs {
		var legal []int
		for d := range NumActions {
			if o.Legal(d) {
				legal = append(legal, d)
			}
		}
		acts[i].Decision = legal[r.IntN(len(legal))]
	}
	return acts
}

func TestSpawnRules(t *testing.T) {
	for _, params := range []map[string]any{
		nil,
		{"size": 10, "players": 3, "foods": 4, "max_player_level": 3, "coop": false},
		{"size": 5, "players": 4, "foods": 3, "max_player_level": 2},
	} {
		e := rawEnv(t, params)
		size := e.p.Size
		for seed := range uint64(500) {
			if _, err := e.Reset(seed); err != nil {
				t.Fatal(err)
			}
			levels := make([]int, 0, len(e.players))
			for i, p := range e.players {
				if p.level < 1 || p.level > e.p.MaxPlayerLevel || e.playerAt[p.r*size+p.c] != int32(i+1) {
					t.Fatalf("%v seed %d: bad player %d %+v", params, seed, i, p)
				}
				levels = append(levels, p.level)
			}
			slices.Sort(levels)
			foodMax := 0
			for _, l := range levels[:min(3, len(levels))] {
				foodMax += l
			}
			if len(e.foods) == 0 {
				t.Fatalf("%v seed %d: no food placed", params, seed)
			}
			for k, f := range e.foods {
				if f.r < 1 || f.r > size-2 || f.c < 1 || f.c > size-2 {
					t.Fatalf("%v seed %d: food %d at (%d,%d) on the border", params, seed, k, f.r, f.c)
				}
				if e.playerAt[f.r*size+f.c] != 0 {
					t.Fatalf("%v seed %d: food %d under a player", params, seed, k)
				}
				if (e.p.Coop && f.level != foodMax) || f.level < 1 || f.level > foodMax {
					t.Fatalf("%v seed %d: food level %d, player levels %v, coop %v", params, seed, f.level, levels, e.p.Coop)
				}
				for j, g := range e.foods[:k] {
					dr, dc := abs(f.r-g.r), abs(f.c-g.c)
					if max(dr, dc) <= 1 || (dr == 0 && dc <= 2) || (dc == 0 && dr <= 2) {
						t.Fatalf("%v seed %d: foods %d (%d,%d) and %d (%d,%d) too close", params, seed, k, f.r, f.c, j, g.r, g.c)
					}
				}
			}
		}
	}
}

func TestRandomPolicyReturnInUnitInterval(t *testing.T) {
	pick := rand.New(rand.NewPCG(7, 7))
	for _, params := range []map[string]any{nil, {"players": 3, "coop": false, "size": 6}} {
		e, err := New(params)
		if err != nil {
			t.Fatal(err)
		}
		positive := 0
		for seed := range uint64(400) {
			obs, err := e.Reset(seed)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for {
				res, err := e.Step(randomActions(pick, obs))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res.Rewards {
					if r < 0 {
						t.Fatalf("seed %d: negative reward %v", seed, r)
					}
					sum += r
				}
				obs = res.Observations
				if !res.Done() {
					continue
				}
				ret := res.Metrics[core.MetricReturn]
				if ret < 0 || ret > 1+1e-12 || math.Abs(ret-sum) > 1e-12 {
					t.Fatalf("%v seed %d: return %v (sum of rewards %v), want in [0,1]", params, seed, ret, sum)
				}
				if e.p.Coop { // equal food levels: return = share of foods collected
					want := res.Metrics[MetricFoodsCollected] / res.Metrics[metricFoodsSpawned]
					if math.Abs(ret-want) > 1e-12 {
						t.Fatalf("seed %d: coop return %v, want %v", seed, ret, want)
					}
				}
				if ret > 0 {
					positive++
				}
				break
			}
		}
		if positive == 0 {
			t.Errorf("%v: a random policy never collected food in 400 episodes", params)
		}
	}
}

func TestBadParams(t *testing.T) {
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"size": 2}, `"size"`},
		{map[string]any{"players": 0}, `"players"`},
		{map[string]any{"players": 40}, `"players"`},
		{map[string]any{"foods": 0}, `"foods"`},
		{map[string]any{"max_player_level": 0}, `"max_player_level"`},
		{map[string]any{"max_steps": 0}, `"max_steps"`},
		{map[string]any{"sight": -1}, `"sight"`},
		{map[string]any{"coop": "yes"}, `"coop"`},
		{map[string]any{"grid": true}, `"grid"`},
	} {
		_, err := New(c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error naming %s", c.params, err, c.want)
		}
	}
	e, _ := New(nil)
	if _, err := e.Step(make([]core.Action, 2)); err == nil {
		t.Error("Step before Reset: want error")
	}
	e.Reset(1)
	for _, acts := range [][]core.Action{{{}}, {{Decision: 6}, {}}, {{}, {Decision: -1}}} {
		if _, err := e.Step(acts); err == nil {
			t.Errorf("Step(%v): want error", acts)
		}
	}
}

func TestTruncate(t *testing.T) {
	e := rawEnv(t, nil)
	layout(t, e, [][3]int{{2, 3, 1}, {3, 4, 2}}, [][3]int{{3, 3, 3}, {6, 5, 3}})
	step(t, e, Load, Load)
	res, err := e.Truncate()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Metrics[MetricFoodsCollected] != 1 || math.Abs(res.Metrics[core.MetricReturn]-0.5) > 1e-12 || res.Metrics[core.MetricMakespan] != 1 {
		t.Errorf("Truncate: %+v", res)
	}
	if _, err := e.Step(make([]core.Action, 2)); err == nil {
		t.Error("Step after Truncate: want error")
	}
}

func TestRegisteredSpec(t *testing.T) {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: Name})
	if err != nil {
		t.Fatal(err)
	}
	env, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	s := env.Spec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	if s.ObsSize != 12 || s.StateSize != 13 || len(s.Decisions) != 6 || s.NumAgents() != 2 || !s.StepRewards || s.MaxSteps != 50 {
		t.Errorf("spec %+v", s)
	}
	obs, err := env.Reset(3)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range obs {
		if len(o.Features) != s.ObsSize || len(o.Mask) != len(s.Decisions) || !o.Mask[None] {
			t.Errorf("agent %d: %d features, mask %v", i, len(o.Features), o.Mask)
		}
	}
	res, err := env.Step(make([]core.Action, 2))
	if err != nil {
		t.Fatal(err)
	}
	keep := append([]float64(nil), res.Observations[1].Features...)
	res.Observations[0].Features[len(res.Observations[0].Features)-1] = 1e9
	res.Rewards[0] = 1e9
	if !reflect.DeepEqual(keep, res.Observations[1].Features) {
		t.Error("agents' features overlap")
	}
	if res2, _ := env.Step(make([]core.Action, 2)); res2.Observations[0].Features[s.ObsSize-1] == 1e9 || res2.Rewards[0] == 1e9 {
		t.Error("a step reuses the previous step's slices")
	}
}

func approxEq(got, want []float64) bool { return closeTol(got, want, 1e-12) }

func closeTol(got, want []float64, tol float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			return false
		}
	}
	return true
}

func BenchmarkStep(b *testing.B) {
	e, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	pick := rand.New(rand.NewPCG(1, 2))
	obs, _ := e.Reset(0)
	acts := make([]core.Action, 2)
	seed := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		for i, o := range obs {
			d := pick.IntN(NumActions)
			for !o.Legal(d) {
				d = pick.IntN(NumActions)
			}
			acts[i].Decision = d
		}
		res, err := e.Step(acts)
		if err != nil {
			b.Fatal(err)
		}
		obs = res.Observations
		if res.Done() {
			seed++
			obs, _ = e.Reset(seed)
		}
	}
}
