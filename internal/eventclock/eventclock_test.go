package eventclock

import (
	"reflect"
	"testing"
)

func TestAdvanceMovesToTheNextFreeSlotAndLandsWorkInOrder(t *testing.T) {
	var landed []string
	slots := []*Slot{
		{BusyUntil: 5, Effect: func() { landed = append(landed, "a@5") }},
		{BusyUntil: 3, Effect: func() { landed = append(landed, "b@3") }},
		{BusyUntil: 3, Effect: func() { landed = append(landed, "c@3") }},
		{BusyUntil: 9},
	}
	now := Advance(1, 10, false, slots)
	if now != 3 {
		t.Fatalf("now = %v, want 3 (the earliest busy slot)", now)
	}
	if want := []string{"b@3", "c@3"}; !reflect.DeepEqual(landed, want) {
		t.Fatalf("landed %v, want %v (ties in slot order)", landed, want)
	}
	if slots[1].Effect != nil || slots[2].Effect != nil || slots[0].Effect == nil {
		t.Fatal("landed effects must be cleared, pending ones kept")
	}
	now = Advance(now, 10, false, slots)
	if now != 5 || !reflect.DeepEqual(landed, []string{"b@3", "c@3", "a@5"}) {
		t.Fatalf("second advance: now %v, landed %v", now, landed)
	}
	// Slot 3 has no effect: the clock still stops when it frees.
	if now = Advance(now, 10, false, slots); now != 9 {
		t.Fatalf("third advance: now = %v, want 9", now)
	}
}

func TestAdvanceLandsInOrderOfFinishingTime(t *testing.T) {
	var landed []int
	mk := func(id int, at float64) *Slot {
		return &Slot{BusyUntil: at, Effect: func() { landed = append(landed, id) }}
	}
	// All finished before now (e.g. after a wait): landed by finishing time, not slot order.
	slots := []*Slot{mk(0, 4), mk(1, 2), mk(2, 3)}
	if now := Advance(6, 1, false, slots); now != 7 {
		t.Fatalf("now = %v, want 7 (nobody busy: now + wait)", now)
	}
	if want := []int{1, 2, 0}; !reflect.DeepEqual(landed, want) {
		t.Fatalf("landed %v, want %v", landed, want)
	}
}

func TestAdvanceWhenNobodyIsBusy(t *testing.T) {
	slots := []*Slot{{BusyUntil: 1}, {BusyUntil: 2}}
	if now := Advance(2, 0.5, false, slots); now != 2.5 {
		t.Fatalf("not done: now = %v, want 2.5 (waited)", now)
	}
	if now := Advance(2, 0.5, true, slots); now != 2 {
		t.Fatalf("done: now = %v, want 2 (the clock stays)", now)
	}
	if now := Advance(0, 1, false, nil); now != 1 {
		t.Fatalf("no slots: now = %v, want 1", now)
	}
}

func TestAdvanceRunsAnEffectOnce(t *testing.T) {
	n := 0
	slots := []*Slot{{BusyUntil: 1, Effect: func() { n++ }}}
	now := Advance(0, 1, false, slots)
	Advance(now, 1, false, slots)
	if n != 1 {
		t.Fatalf("effect ran %d times, want 1", n)
	}
}
