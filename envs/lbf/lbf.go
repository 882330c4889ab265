// Package lbf implements Level-Based Foraging (Albrecht & Ramamoorthy 2013;
// the lbforaging package's v3 rules as benchmarked by Papoudakis et al. 2021)
// as a [core.Env] registered under the name "lbf". The default scenario is
// Foraging-8x8-2p-2f-coop.
//
// # Rules
//
// Players (agents) and food items sit on a size×size grid; each has a level.
// At Reset, players are placed one by one on uniformly random free cells with
// levels uniform in 1..max_player_level; then up to `foods` food items are
// placed by rejection sampling (at most 1000 attempts, as lbforaging does) on
// interior cells (never on the border rows and columns) whose 3×3
// neighbourhood holds no food, that have no food two cells away in a straight
// line, and that hold no player. A food's level is the sum of the lowest three
// player levels (with up to three players: the sum of all player levels) when
// coop is true, else uniform in 1..that sum.
//
// Each step every player picks NONE, NORTH, SOUTH, WEST, EAST or LOAD
// (decisions "none", "north", "south", "west", "east", "load"; north is row−1,
// west is col−1). A move is legal only into an in-bounds cell that holds
// neither food nor a player at the start of the step; LOAD is legal only next
// to (4-neighbourhood) a food; NONE is always legal. An illegal decision is
// played as NONE, like lbforaging. Moves are simultaneous: when several
// players move into the same cell, all of them stay put. Then loads resolve:
// players are taken in index order; a loader not yet handled picks its
// adjacent food (north, south, west, east first), and all not-yet-handled
// loaders 4-adjacent to that food form its group. If the group's summed level
// is at least the food's level, the food is collected and each member i gets
// reward level_i·food_level / (Σ group levels · Σ initial food levels), so the
// team return of an episode is at most 1. Otherwise nothing happens (no
// penalty). The episode terminates when no food is left and is truncated
// after max_steps steps.
//
// Deviations from lbforaging: lbforaging's legal-action mask ignores other
// players, which lets a player follow another into the cell it leaves in the
// same step, lets two players swap cells and, in a corner case, lets two
// share one (a mover enters the cell of a player whose own move failed in a
// collision); here a move into a cell occupied at the start of the step is
// illegal (played as NONE), so players never follow, swap or share. And
// lbforaging ends an episode at its time limit with terminated = true; here
// a time limit is a truncation (Truncated, not Terminated). The order of
// loaders is fixed (index order) where lbforaging pops a Python set; with
// lbforaging's food placement no cell is adjacent to two foods, so the order
// never changes an outcome. conformance_test.go replays trajectories
// recorded from lbforaging (testdata/) and checks that every step matches
// or differs for one of these reasons.
//
// # Observations
//
// Agent i's features follow lbforaging's flat layout: (row, col, level) for
// each visible food in row-major order of the grid, then (−1, −1, 0) for the
// remaining food slots; then (row, col, level) of itself, of each visible
// other player in index order, then (−1, −1, 0) for the remaining player
// slots. ObsSize = 3·foods + 3·players. Coordinates are relative to the
// agent's sight window, which starts at (max(row−sight, 0), max(col−sight, 0));
// with full sight (sight ≥ size, the default) they are absolute. As in
// lbforaging, another player is visible when its window coordinates are both
// in 0..2·sight, a food when it lies inside the window.
//
// Unless raw_obs is true, features are scaled to O(1): coordinates are divided
// by size−1 and levels by max_player_level·min(players, 3) (the highest food
// level possible); the (−1, −1, 0) placeholders are not scaled. With
// raw_obs = true the features are lbforaging's integers.
//
// State returns, for every food slot in placement order, its absolute
// (row, col, level) or (−1, −1, 0) once collected or never placed; then every
// player's absolute (row, col, level) in index order; then steps taken ÷
// max_steps. StateSize = 3·foods + 3·players + 1. Scaling follows raw_obs.
//
// Every observation, mask and reward slice returned by Reset and Step is
// freshly allocated and belongs to the caller.
//
// # Baseline
//
// The env offers one scripted joint policy (core.CapBaseline),
// "greedy_food" ([BaselineGreedyFood]): a centralized planner that sends
// the cheapest coalition of players able to load a food to it, by arrival
// time, re-planning every step ([Env.Baseline] gives the rule). `troupe
// eval` plays it beside the trained policy.
//
// # Params and metrics
//
// Params (env.params): size (8), players (2), foods (2), max_player_level (2),
// coop (true), max_steps (50), sight (0, meaning size: full observability),
// raw_obs (false).
//
// The published configurations (lbforaging's registered v3 ids, as
// benchmarked by Papoudakis et al. 2021: player levels 1–2, full sight,
// 50 steps, no penalty, normalised rewards) are these params; the others
// keep their defaults:
//
//	Foraging-8x8-2p-2f-coop    size 8,  players 2, foods 2, coop true (the defaults)
//	Foraging-10x10-3p-3f       size 10, players 3, foods 3, coop false
//	Foraging-15x15-4p-3f       size 15, players 4, foods 3, coop false
//
// examples/lbf, examples/lbf-10x10-3p-3f and examples/lbf-15x15-4p-3f ship
// them as agentfiles.
//
// On the last step, StepResult.Metrics holds "return" (the team return, the
// sum of all agents' rewards, in [0, 1]), "foods_collected", "foods_spawned",
// "makespan_s" (steps taken; a step is one virtual second),
// "reference_makespan_s" (max_steps), and "tokens" and "reference_tokens"
// (both 0: no LLM is involved; reward functions treat a zero reference as "do
// not normalise").
package lbf

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/troupe-dev/troupe/core"
)

// Name is the env's registered name ("builtin:lbf").
const Name = "lbf"

// Decisions, indexing core.Action.Decision (lbforaging's Action enum).
const (
	None = iota
	North
	South
	West
	East
	Load
	// NumActions is the number of decisions.
	NumActions
)

// The env's own metrics, reported on the last step with the well-known
// core.MetricReturn, core.MetricMakespan, core.MetricReferenceMakespan,
// core.MetricTokens and core.MetricReferenceTokens.
const (
	// MetricFoodsCollected is the number of foods collected in the episode.
	MetricFoodsCollected = "foods_collected"
	// metricFoodsSpawned is the number of foods placed at Reset.
	metricFoodsSpawned = "foods_spawned"
)

const (
	// pcgStream is the second PCG seed word; Reset(seed) seeds PCG(seed, pcgStream).
	pcgStream = 0x6c62662d666f6f64 // "lbf-food"
	// spawnAttempts bounds food placement, as in lbforaging.
	spawnAttempts = 1000
	maxSize       = 64
	maxLevel      = 1000
	maxEpisode    = 100000
)

var decisionNames = [NumActions]string{"none", "north", "south", "west", "east", "load"}

// drow and dcol give each decision's displacement (NONE and LOAD stay).
var (
	drow = [NumActions]int{0, -1, 1, 0, 0, 0}
	dcol = [NumActions]int{0, 0, 0, -1, 1, 0}
)

func init() {
	core.RegisterEnv(Name, func(params map[string]any) (core.Env, error) { return New(params) })
}

// Params are the env's parameters as decoded from env.params.
type Params struct {
	// Size is the grid's side length.
	Size int `json:"size"`
	// Players is the number of agents.
	Players int `json:"players"`
	// Foods is the number of food items placed (at most; see the package doc).
	Foods int `json:"foods"`
	// MaxPlayerLevel bounds the uniformly drawn player levels 1..MaxPlayerLevel.
	MaxPlayerLevel int `json:"max_player_level"`
	// Coop sets every food's level to the sum of the (lowest three) player levels.
	Coop bool `json:"coop"`
	// MaxSteps is the episode's time limit.
	MaxSteps int `json:"max_steps"`
	// Sight is the radius of the square an agent sees; 0 means Size (full).
	Sight int `json:"sight"`
	// RawObs disables feature scaling.
	RawObs bool `json:"raw_obs"`
}

// DefaultParams returns the Foraging-8x8-2p-2f-coop scenario.
func DefaultParams() Params {
	return Params{Size: 8, Players: 2, Foods: 2, MaxPlayerLevel: 2, Coop: true, MaxSteps: 50}
}

func (p *Params) validate() error {
	bad := func(key, want string, got int) error {
		return fmt.Errorf("lbf: params: key %q: want %s, got %d", key, want, got)
	}
	switch {
	case p.Size < 3 || p.Size > maxSize:
		return bad("size", fmt.Sprintf("3..%d", maxSize), p.Size)
	case p.Players < 1 || p.Players > p.Size*p.Size/2:
		return bad("players", fmt.Sprintf("1..%d (half the cells of a %dx%d grid)", p.Size*p.Size/2, p.Size, p.Size), p.Players)
	case p.Foods < 1 || p.Foods > (p.Size-2)*(p.Size-2):
		return bad("foods", fmt.Sprintf("1..%d (the interior cells)", (p.Size-2)*(p.Size-2)), p.Foods)
	case p.MaxPlayerLevel < 1 || p.MaxPlayerLevel > maxLevel:
		return bad("max_player_level", fmt.Sprintf("1..%d", maxLevel), p.MaxPlayerLevel)
	case p.MaxSteps < 1 || p.MaxSteps > maxEpisode:
		return bad("max_steps", fmt.Sprintf("1..%d", maxEpisode), p.MaxSteps)
	case p.Sight < 0:
		return bad("sight", "0 (full) or a positive radius", p.Sight)
	}
	if p.Sight == 0 || p.Sight > p.Size {
		p.Sight = p.Size
	}
	return nil
}

type player struct{ r, c, level int }

type food struct {
	r, c, level int
	alive       bool
}

// Env is one LBF instance. It is not safe for concurrent use.
type Env struct {
	p    Params
	spec core.EnvSpec
	pcg  *rand.PCG
	rng  *rand.Rand

	coordScale, levelScale float64 // multipliers applied to features
	obsSize, stateSize     int

	players  []player
	foods    []food  // in placement order; len ≤ p.Foods
	order    []int   // indices of foods in row-major order of their cells
	foodAt   []int32 // per cell: food index + 1, or 0
	playerAt []int32 // per cell: player index + 1, or 0

	// per-step scratch, reused
	act     []int
	target  []int   // cell a mover heads for, or -1
	arrive  []int32 // per cell: number of movers heading there
	handled []bool  // loader already in a group this step
	group   []int

	spawned   float64 // Σ initial food levels
	collected int
	ret       float64
	t         int
	started   bool
	done      bool
}

// New returns an LBF env configured by params (see the package doc).
func New(params map[string]any) (*Env, error) {
	p := DefaultParams()
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("lbf: %w", err)
	}
	return newEnv(p)
}

func newEnv(p Params) (*Env, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	n, cells := p.Players, p.Size*p.Size
	e := &Env{
		p:         p,
		pcg:       rand.NewPCG(0, pcgStream),
		obsSize:   3*p.Foods + 3*n,
		stateSize: 3*p.Foods + 3*n + 1,
		players:   make([]player, n),
		foods:     make([]food, 0, p.Foods),
		order:     make([]int, 0, p.Foods),
		foodAt:    make([]int32, cells),
		playerAt:  make([]int32, cells),
		act:       make([]int, n),
		target:    make([]int, n),
		arrive:    make([]int32, cells),
		handled:   make([]bool, n),
		group:     make([]int, 0, n),
	}
	e.rng = rand.New(e.pcg)
	e.coordScale, e.levelScale = 1, 1
	if !p.RawObs {
		e.coordScale = 1 / float64(p.Size-1)
		e.levelScale = 1 / float64(p.MaxPlayerLevel*min(n, 3))
	}
	agents := make([]string, n)
	for i := range agents {
		agents[i] = fmt.Sprintf("agent_%d", i)
	}
	decisions := make([]core.DecisionSpec, NumActions)
	for i, name := range decisionNames {
		decisions[i] = core.DecisionSpec{Name: name}
	}
	e.spec = core.EnvSpec{
		Name:         Name,
		Agents:       agents,
		ObsSize:      e.obsSize,
		Decisions:    decisions,
		StateSize:    e.stateSize,
		StepRewards:  true,
		Capabilities: core.CapTruncate | core.CapBaseline,
		Baselines:    []string{BaselineGreedyFood},
		Metrics: []string{core.MetricReturn, MetricFoodsCollected, metricFoodsSpawned, core.MetricMakespan,
			core.MetricReferenceMakespan, core.MetricTokens, core.MetricReferenceTokens},
		MaxSteps: p.MaxSteps,
	}
	return e, nil
}

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Params returns the validated params (Sight resolved: never 0).
func (e *Env) Params() Params { return e.p }

// Reset places players and food for the episode of the given seed.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	e.pcg.Seed(seed, pcgStream)
	clear(e.foodAt)
	clear(e.playerAt)
	size := e.p.Size
	for i := range e.players {
		for { // at most half the cells are taken, so this ends quickly
			r, c := e.rng.IntN(size), e.rng.IntN(size)
			if e.playerAt[r*size+c] == 0 {
				e.players[i] = player{r: r, c: c, level: 1 + e.rng.IntN(e.p.MaxPlayerLevel)}
				e.playerAt[r*size+c] = int32(i + 1)
				break
			}
		}
	}
	levels := make([]int, len(e.players))
	for i, pl := range e.players {
		levels[i] = pl.level
	}
	slices.Sort(levels)
	foodMax := 0
	for _, l := range levels[:min(3, len(levels))] {
		foodMax += l
	}
	e.foods = e.foods[:0]
	for attempt := 0; len(e.foods) < e.p.Foods && attempt < spawnAttempts; attempt++ {
		r, c := 1+e.rng.IntN(size-2), 1+e.rng.IntN(size-2)
		if !e.canPlaceFood(r, c) {
			continue
		}
		level := foodMax
		if !e.p.Coop {
			level = 1 + e.rng.IntN(foodMax)
		}
		e.foods = append(e.foods, food{r: r, c: c, level: level, alive: true})
		e.foodAt[r*size+c] = int32(len(e.foods))
	}
	e.begin()
	return e.observations(make([]float64, len(e.players)*e.obsSize), len(e.players)), nil
}

// setLayout starts an episode from a fixed layout instead of a seed: the
// players (len = params players) and up to params foods food items, given as
// (row, col, level) triples. Tests use it to pin each rule.
func (e *Env) setLayout(players, foods [][3]int) error {
	spawned := 0
	for _, f := range foods {
		spawned += f[2]
	}
	return e.startFrom(players, foods, spawned, 0)
}

// startFrom starts an episode in a given state instead of from a seed: the
// players (len = params players, on distinct cells), the food items still on
// the grid (up to params foods, as (row, col, level) triples), the summed
// level of the foods placed at the episode's start (what rewards are
// normalised by; at least the levels given) and the steps already taken
// (0..max_steps−1). The episode terminates when the foods given are
// collected. Tests use it to replay the reference implementation's recorded
// trajectories (conformance_test.go) from their states.
func (e *Env) startFrom(players, foods [][3]int, spawned, steps int) error {
	size := e.p.Size
	if len(players) != len(e.players) || len(foods) > e.p.Foods {
		return fmt.Errorf("lbf: layout: %d players and %d foods, want %d and at most %d",
			len(players), len(foods), len(e.players), e.p.Foods)
	}
	if steps < 0 || steps >= e.p.MaxSteps {
		return fmt.Errorf("lbf: layout: %d steps taken, want 0..%d", steps, e.p.MaxSteps-1)
	}
	clear(e.foodAt)
	clear(e.playerAt)
	e.foods = e.foods[:0]
	for i, q := range players {
		r, c, l := q[0], q[1], q[2]
		if r < 0 || r >= size || c < 0 || c >= size || l < 1 || e.playerAt[r*size+c] != 0 {
			return fmt.Errorf("lbf: layout: player %d at (%d,%d) level %d: off the grid, taken or not a level", i, r, c, l)
		}
		e.players[i] = player{r: r, c: c, level: l}
		e.playerAt[r*size+c] = int32(i + 1)
	}
	levels := 0
	for k, q := range foods {
		r, c, l := q[0], q[1], q[2]
		if r < 0 || r >= size || c < 0 || c >= size || l < 1 || e.playerAt[r*size+c] != 0 || e.foodAt[r*size+c] != 0 {
			return fmt.Errorf("lbf: layout: food %d at (%d,%d) level %d: off the grid, taken or not a level", k, r, c, l)
		}
		e.foods = append(e.foods, food{r: r, c: c, level: l, alive: true})
		e.foodAt[r*size+c] = int32(k + 1)
		levels += l
	}
	if spawned < levels {
		return fmt.Errorf("lbf: layout: spawned food levels %d, less than the %d of the foods given", spawned, levels)
	}
	e.begin()
	e.spawned, e.t = float64(spawned), steps
	return nil
}

// canPlaceFood applies lbforaging's spawn test to cell (r, c).
func (e *Env) canPlaceFood(r, c int) bool {
	size := e.p.Size
	for rr := max(r-1, 0); rr <= min(r+1, size-1); rr++ {
		for cc := max(c-1, 0); cc <= min(c+1, size-1); cc++ {
			if e.foodAt[rr*size+cc] != 0 {
				return false
			}
		}
	}
	for d := -2; d <= 2; d++ {
		if rr := r + d; rr >= 0 && rr < size && e.foodAt[rr*size+c] != 0 {
			return false
		}
		if cc := c + d; cc >= 0 && cc < size && e.foodAt[r*size+cc] != 0 {
			return false
		}
	}
	return e.playerAt[r*size+c] == 0
}

// begin finishes setting up an episode once players and foods are placed.
func (e *Env) begin() {
	e.order = e.order[:0]
	e.spawned = 0
	for i, f := range e.foods {
		e.order = append(e.order, i)
		e.spawned += float64(f.level)
	}
	slices.SortFunc(e.order, func(a, b int) int {
		fa, fb := e.foods[a], e.foods[b]
		return (fa.r*e.p.Size + fa.c) - (fb.r*e.p.Size + fb.c)
	})
	e.collected, e.ret, e.t = 0, 0, 0
	e.started, e.done = true, false
}

// legal reports whether player i may take decision a now.
func (e *Env) legal(i, a int) bool {
	pl := e.players[i]
	switch a {
	case None:
		return true
	case Load:
		return e.adjacentFood(pl.r, pl.c) >= 0
	}
	r, c := pl.r+drow[a], pl.c+dcol[a]
	if r < 0 || r >= e.p.Size || c < 0 || c >= e.p.Size {
		return false
	}
	cell := r*e.p.Size + c
	return e.foodAt[cell] == 0 && e.playerAt[cell] == 0
}

// adjacentFood returns the index of the food north, south, west or east of
// (r, c), checked in that order, or -1.
func (e *Env) adjacentFood(r, c int) int {
	size := e.p.Size
	for _, a := range [4]int{North, South, West, East} {
		rr, cc := r+drow[a], c+dcol[a]
		if rr >= 0 && rr < size && cc >= 0 && cc < size {
			if f := e.foodAt[rr*size+cc]; f != 0 {
				return int(f - 1)
			}
		}
	}
	return -1
}

// Step applies one decision per player.
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	n := len(e.players)
	switch {
	case !e.started:
		return core.StepResult{}, errors.New("lbf: Step before Reset")
	case e.done:
		return core.StepResult{}, errors.New("lbf: Step after the episode ended; call Reset")
	case len(actions) != n:
		return core.StepResult{}, fmt.Errorf("lbf: Step: want %d actions, got %d", n, len(actions))
	}
	for i, a := range actions {
		if a.Decision < 0 || a.Decision >= NumActions {
			return core.StepResult{}, fmt.Errorf("lbf: Step: agent %d: decision %d out of range 0..%d", i, a.Decision, NumActions-1)
		}
	}
	size := e.p.Size
	for i, a := range actions {
		d := a.Decision
		if !e.legal(i, d) {
			d = None
		}
		e.act[i] = d
		e.target[i] = -1
		if drow[d] != 0 || dcol[d] != 0 {
			pl := e.players[i]
			cell := (pl.r+drow[d])*size + pl.c + dcol[d]
			e.target[i] = cell
			e.arrive[cell]++
		}
	}
	// Targets were free at the start of the step, so only movers compete.
	for i, cell := range e.target {
		if cell < 0 {
			continue
		}
		if e.arrive[cell] == 1 {
			pl := &e.players[i]
			e.playerAt[pl.r*size+pl.c] = 0
			pl.r, pl.c = cell/size, cell%size
			e.playerAt[cell] = int32(i + 1)
		}
	}
	for _, cell := range e.target {
		if cell >= 0 {
			e.arrive[cell] = 0
		}
	}

	// One allocation holds every agent's features and the rewards.
	buf := make([]float64, n*e.obsSize+n)
	rewards := buf[n*e.obsSize:]
	clear(e.handled)
	for i := range n {
		if e.act[i] != Load || e.handled[i] {
			continue
		}
		fi := e.adjacentFood(e.players[i].r, e.players[i].c)
		if fi < 0 { // cannot happen: loaders stand still and food only goes with its group
			e.handled[i] = true
			continue
		}
		f := &e.foods[fi]
		e.group = e.group[:0]
		sum := 0
		for j := range n {
			pj := e.players[j]
			if e.act[j] == Load && !e.handled[j] && abs(pj.r-f.r)+abs(pj.c-f.c) == 1 {
				e.handled[j] = true
				e.group = append(e.group, j)
				sum += pj.level
			}
		}
		if sum < f.level {
			continue
		}
		for _, j := range e.group {
			rewards[j] = float64(e.players[j].level*f.level) / (float64(sum) * e.spawned)
		}
		f.alive = false
		e.foodAt[f.r*size+f.c] = 0
		e.collected++
	}
	for _, r := range rewards {
		e.ret += r
	}
	e.t++
	res := core.StepResult{Observations: e.observations(buf[:n*e.obsSize], n), Rewards: rewards[:n:n]}
	if e.collected == len(e.foods) {
		res.Terminated = true
	} else if e.t >= e.p.MaxSteps {
		res.Truncated = true
	}
	if res.Done() {
		e.done = true
		res.Metrics = e.metrics()
	}
	return res, nil
}

// Truncate ends the episode now and reports what was collected so far.
func (e *Env) Truncate() (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("lbf: Truncate before Reset")
	}
	n := len(e.players)
	e.done = true
	return core.StepResult{
		Observations: e.observations(make([]float64, n*e.obsSize), n),
		Rewards:      make([]float64, n),
		Truncated:    true,
		Metrics:      e.metrics(),
	}, nil
}

func (e *Env) metrics() map[string]float64 {
	return map[string]float64{
		core.MetricReturn:            e.ret,
		MetricFoodsCollected:         float64(e.collected),
		metricFoodsSpawned:           float64(len(e.foods)),
		core.MetricMakespan:          float64(e.t),
		core.MetricReferenceMakespan: float64(e.p.MaxSteps),
		core.MetricTokens:            0,
		core.MetricReferenceTokens:   0,
	}
}

// observations fills feats (n·obsSize values) with every agent's features
// and returns the observations with fresh masks.
func (e *Env) observations(feats []float64, n int) []core.Observation {
	obs := make([]core.Observation, n)
	masks := make([]bool, n*NumActions)
	for i := range n {
		f := feats[i*e.obsSize : (i+1)*e.obsSize : (i+1)*e.obsSize]
		e.fillFeatures(i, f)
		m := masks[i*NumActions : (i+1)*NumActions : (i+1)*NumActions]
		for a := range NumActions {
			m[a] = e.legal(i, a)
		}
		obs[i] = core.Observation{Features: f, Mask: m}
	}
	return obs
}

// fillFeatures writes agent i's lbforaging-layout features into f.
func (e *Env) fillFeatures(i int, f []float64) {
	for k := 0; k < len(f); k += 3 {
		f[k], f[k+1], f[k+2] = -1, -1, 0
	}
	size, s := e.p.Size, e.p.Sight
	me := e.players[i]
	r0, c0 := max(me.r-s, 0), max(me.c-s, 0)
	r1, c1 := min(me.r+s+1, size), min(me.c+s+1, size)
	k := 0
	for _, fi := range e.order {
		fd := e.foods[fi]
		if fd.alive && fd.r >= r0 && fd.r < r1 && fd.c >= c0 && fd.c < c1 {
			e.put(f[3*k:], fd.r-r0, fd.c-c0, fd.level)
			k++
		}
	}
	base := f[3*e.p.Foods:]
	e.put(base, me.r-r0, me.c-c0, me.level)
	k = 1
	for j, pj := range e.players {
		if j == i {
			continue
		}
		rr, cc := pj.r-r0, pj.c-c0
		if min(rr, cc) >= 0 && max(rr, cc) <= 2*s {
			e.put(base[3*k:], rr, cc, pj.level)
			k++
		}
	}
}

// put writes one scaled (row, col, level) triple.
func (e *Env) put(f []float64, r, c, level int) {
	f[0] = float64(r) * e.coordScale
	f[1] = float64(c) * e.coordScale
	f[2] = float64(level) * e.levelScale
}

// State returns the global state (see the package doc).
func (e *Env) State() []float64 {
	s := make([]float64, e.stateSize)
	for k := range e.p.Foods {
		if k < len(e.foods) && e.foods[k].alive {
			fd := e.foods[k]
			e.put(s[3*k:], fd.r, fd.c, fd.level)
		} else {
			s[3*k], s[3*k+1] = -1, -1
		}
	}
	base := s[3*e.p.Foods:]
	for j, pl := range e.players {
		e.put(base[3*j:], pl.r, pl.c, pl.level)
	}
	s[len(s)-1] = float64(e.t) / float64(e.p.MaxSteps)
	return s
}

// Close does nothing; the env holds no resources.
func (e *Env) Close() error { return nil }

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
