package demo

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// approvalPause is how long the demo lets a wave visibly wait for approval
// before the operator approves it.
const approvalPause = 1500 * time.Millisecond

// view is what one look at the fleet saw, and what the operator did.
type view struct {
	fs       *fleetv1alpha1.FleetStage
	rollouts []fleetv1alpha1.FleetRollout
	now      time.Time
	// waiting records when a wave was first seen waiting for approval.
	waiting map[string]time.Time
	notes   []string
	// since is when the phase began: only rollouts created since are drawn.
	since time.Time
}

// forward returns the forward rollout of freight, the newest if several.
func (v *view) forward(freight string) *fleetv1alpha1.FleetRollout {
	var found *fleetv1alpha1.FleetRollout
	for i := range v.rollouts {
		ro := &v.rollouts[i]
		if ro.Spec.Direction == fleetv1alpha1.DirectionForward && ro.Spec.Freight.Name == freight &&
			(found == nil || fleetrollout.Compare(ro, found) >= 0) {
			found = ro
		}
	}
	return found
}

// rollbackOf returns the rollback of the named rollout.
func (v *view) rollbackOf(name string) *fleetv1alpha1.FleetRollout {
	for i := range v.rollouts {
		ro := &v.rollouts[i]
		if ro.Spec.Direction == fleetv1alpha1.DirectionRollback && ro.Spec.RollbackOf == name {
			return ro
		}
	}
	return nil
}

// waitedFor says how long a wave has been seen waiting for approval.
func (v *view) waitedFor(wave string) time.Duration {
	t, ok := v.waiting[wave]
	if !ok {
		return 0
	}
	return v.now.Sub(t)
}

// note adds a line under the progress, kept until the phase ends.
func (v *view) note(s string) { v.notes = append(v.notes, s) }

// poll calls check every Refresh until it is done, fails, or the phase
// times out.
func (s *story) poll(ctx context.Context, check func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.PhaseTimeout)
	defer cancel()
	ticker := s.o.Clock.NewTicker(s.o.Refresh)
	defer ticker.Stop()
	for {
		done, err := check(ctx)
		if ctx.Err() != nil && !done {
			return fmt.Errorf("not within %s", s.o.PhaseTimeout)
		}
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", s.o.PhaseTimeout)
		case <-ticker.C():
		}
	}
}

// follow draws the fleet's progress while check decides whether the phase
// is over. The last frame stays on screen.
func (s *story) follow(ctx context.Context, title string, check func(context.Context, *view) (bool, error)) error {
	live := report.NewLive(s.out, s.o.TTY).WithWidth(s.o.Width)
	begin := s.o.Clock.Now()
	v := &view{waiting: map[string]time.Time{}, since: begin.Add(-time.Second)}
	var lastSnapshot time.Time
	lastSignature := ""
	draw := func(force bool) {
		if v.fs == nil {
			return
		}
		sig := signature(v)
		if !s.o.TTY && !force && sig == lastSignature && v.now.Sub(lastSnapshot) < s.o.SnapshotEvery {
			return
		}
		if !s.o.TTY && !force && v.now.Sub(lastSnapshot) < time.Second {
			return
		}
		lastSignature, lastSnapshot = sig, v.now
		_ = live.Draw(s.frame(title, v.now.Sub(begin), v))
	}
	err := s.poll(ctx, func(ctx context.Context) (bool, error) {
		if err := s.look(ctx, v); err != nil {
			return false, err
		}
		done, err := check(ctx, v)
		draw(done || err != nil)
		return done, err
	})
	if err != nil && v.fs != nil {
		draw(true)
	}
	live.Forget()
	return err
}

// look reads the FleetStage and its rollouts.
func (s *story) look(ctx context.Context, v *view) error {
	fs, err := s.fleetStage(ctx)
	if err != nil {
		return err
	}
	var list fleetv1alpha1.FleetRolloutList
	if err := s.c.List(ctx, &list, client.InNamespace(Project)); err != nil {
		return fmt.Errorf("error listing FleetRollouts: %w", err)
	}
	v.fs, v.now, v.rollouts = fs, s.o.Clock.Now(), v.rollouts[:0]
	for _, ro := range list.Items {
		if ro.Spec.FleetStage == FleetStageName {
			v.rollouts = append(v.rollouts, ro)
		}
	}
	for _, ro := range v.rollouts {
		for _, w := range ro.Status.Waves {
			if _, seen := v.waiting[w.Name]; w.Phase == fleetv1alpha1.WaveWaitingForApproval && !seen {
				v.waiting[w.Name] = v.now
			}
		}
	}
	return nil
}

// frame renders one picture of the fleet.
func (s *story) frame(title string, elapsed time.Duration, v *view) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "── %s · %s ──\n\n", title, elapsed.Round(100*time.Millisecond))
	in := report.Input{FleetStage: v.fs, Rollouts: recent(v), Aliases: map[string]string{s.good: GoodAlias, s.bad: BadAlias,
		FreightName(ErrorAlias): ErrorAlias}}
	_ = report.RenderText(&b, report.Build(in), report.TextOptions{
		Now: v.now, ASCII: s.o.ASCII, Color: s.o.Color, MaxExamples: 2, NoLegend: true, Width: s.o.Width,
	})
	for _, n := range v.notes {
		fmt.Fprintf(&b, "\n%s\n", n)
	}
	return b.String()
}

// recent keeps the rollouts of this phase worth drawing: unfinished ones,
// the ones they roll back, and the newest finished one.
func recent(v *view) []fleetv1alpha1.FleetRollout {
	var out []fleetv1alpha1.FleetRollout
	for _, ro := range report.Relevant(v.fs, v.rollouts) {
		if !ro.CreationTimestamp.Time.Before(v.since.Truncate(time.Second)) {
			out = append(out, ro)
		}
	}
	return out
}

// signature sums up what a frame shows, to print a snapshot only when
// something changed.
func signature(v *view) string {
	var b strings.Builder
	for _, ro := range v.rollouts {
		fmt.Fprintf(&b, "%s:%s;", ro.Name, ro.Status.Phase)
		for _, w := range ro.Status.Waves {
			fmt.Fprintf(&b, "%s:%s;", w.Name, w.Phase)
		}
	}
	return b.String()
}
