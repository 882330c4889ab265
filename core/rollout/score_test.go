package rollout

import (
	"fmt"
	"math"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// manyComponents scores fixed components whose weighted sum depends on the
// order of addition in the last bits.
type manyComponents map[string]float64

func (m manyComponents) Name() string { return "many" }
func (m manyComponents) Components() []string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	return names
}
func (m manyComponents) Score(*core.Episode) (map[string]float64, map[string]float64, error) {
	return m, nil, nil
}

// TestJointRewardIndependentOfMapOrder scores the same episode many times:
// the joint reward must be the same bits every time (it was summed in map
// order, which differed from run to run in the last bit).
func TestJointRewardIndependentOfMapOrder(t *testing.T) {
	comps, weights := manyComponents{}, map[string]float64{}
	for i := range 12 {
		k := fmt.Sprintf("c%02d", i)
		comps[k] = 1 / float64(3+7*i) * math.Pow(-1, float64(i))
		weights[k] = 0.1 + 1/float64(1+i)
	}
	s := &Setup{Rewards: []core.RewardFunc{comps}, Weights: weights}
	var want float64
	for i := range 12 { // name order
		k := fmt.Sprintf("c%02d", i)
		want += weights[k] * comps[k]
	}
	for range 200 {
		res := EpisodeResult{}
		s.score(&res)
		if math.Float64bits(res.Reward) != math.Float64bits(want) {
			t.Fatalf("joint reward %v (%#x), want %v (%#x) summed in name order", res.Reward, math.Float64bits(res.Reward), want, math.Float64bits(want))
		}
	}
}
