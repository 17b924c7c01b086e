package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kargo-fleet/kargo-fleet/internal/strutil"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetenv"
)

// results is everything a run measured; good, breach and probe are nil
// when their phase did not run.
type results struct {
	cfg        config
	namespace  string
	partition  int // 1-based
	started    time.Time
	total      time.Duration
	idle       writeCounts
	hold       string
	setup      *setupResult
	good       *rolloutResult
	breach     *breachResult
	probe      *freightProbe
	sizes      []objSize
	events     map[string]int
	eventTotal int
	peakRSS    int64
	hwm        int64
	finalRSS   int64
	heapBytes  float64
	metrics    []string
	failing    int
}

const mib = 1 << 20

func ms(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + ms(-d)
	case d < 10*time.Second:
		return fmt.Sprintf("%.3f s", d.Seconds())
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

func perTarget(w writeCounts, n int) string {
	return fmt.Sprintf("%.0f (%.2f per target; %s)", w.total(), w.total()/float64(max(n, 1)), w)
}

func goal(ok bool, text string) string {
	if ok {
		return text + " ✓"
	}
	return text + " ✗"
}

// write renders the report as Markdown.
func (r *results) write(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	if r.cfg.partitions > 1 {
		p("# Scale run: partition %d of %d (Project %s), %d targets each\n\n", r.partition, r.cfg.partitions, r.namespace, r.cfg.targets)
		p("One controller holds this fleet and the fleets of the partitions before it, which finished their phases: %d target Stages "+
			"once this one is Ready. Peak RSS is the controller's over the whole run so far.\n\n", r.cfg.targets*r.partition)
	} else {
		p("# Scale run: %d targets\n\n", r.cfg.targets)
	}
	p("%s, %d CPUs (shared), %s; kube-apiserver and etcd from internal/envtest, the Kargo simulator (%d Promotion and %d Stage workers, 200 ms poll floor) in the harness process, "+
		"`kargo-fleet controller` as its own process (user %s, the chart's ClusterRole, --kube-api-qps 500, --kube-api-burst 1000, --max-concurrent-reconciles %d, GOMEMLIMIT %s). "+
		"Simulated steps succeed at once unless a fault is injected. Total run %s.\n\n",
		r.started.UTC().Format(time.DateTime+" UTC"), runtime.NumCPU(), runtime.Version(), r.cfg.simWorkers, r.cfg.simStages,
		fleetenv.ControllerUser, r.cfg.concurrency, cmp.Or(r.cfg.goMemLimit, "unset"), ms(r.total))
	if r.hold != "" {
		p("Hold: %s.\n\n", r.hold)
	}
	p("| Measure | Value | Goal |\n|---|---|---|\n")
	if r.setup == nil {
		r.writeProbe(p)
		return
	}
	r.writeExpansion(p)
	r.writeRollout(p)
	r.writeBreach(p)
	r.writeCommon(p)
	r.writeDetails(p)
}

type printer func(format string, args ...any)

func (r *results) writeExpansion(p printer) {
	n := r.cfg.targets
	p("| Targets | %d | |\n", n)
	p("| FleetStage created → Ready (every Stage created) | %s | |\n", ms(r.setup.ready))
	p("| FleetStage created → every target Stage initialised by the simulator | %s | |\n", ms(r.setup.settled))
	p("| Controller writes to expand the fleet | %s | |\n", perTarget(r.setup.writes, n))
}

func (r *results) writeRollout(p printer) {
	if r.good == nil {
		return
	}
	n := r.cfg.targets
	p("| Waves | %s | |\n", waveSizes(r.good.waves))
	p("| Rollout wall time, first wave Promotion → FleetRollout Succeeded | %s | |\n", ms(r.good.rolloutWall))
	bound := r.good.bound.total()
	p("| Policy bound of the rollout: Σ waves ⌈members / maxConcurrent⌉ × the time a target holds its slot + soaks | %s | |\n", r.good.bound)
	p("| Rollout wall time / policy bound | %.2f | %s |\n", r.good.rolloutWall.Seconds()/max(bound.Seconds(), 0.001),
		goal(bound > 0 && r.good.rolloutWall <= 3*bound, "≤ 3"))
	p("| Controller CPU per target during the rollout | %.1f ms (%.1f s) | |\n", 1000*r.good.cpu/float64(max(n, 1)), r.good.cpu)
	// The goal is per rollout: expanding the fleet (one Stage per target)
	// is paid once, when the fleet is defined, not for every release.
	perRollout := r.good.writes.total() / float64(max(n, 1))
	p("| Controller writes during the rollout | %s | %s |\n", perTarget(r.good.writes, n), goal(perRollout <= 2, "≤ 2 per target"))
	all := (r.setup.writes.total() + r.good.writes.total()) / float64(n)
	p("| Controller writes per target, expansion + first rollout | %.2f | |\n", all)
}

func (r *results) writeBreach(p printer) {
	b := r.breach
	if b == nil {
		return
	}
	p("| Bad Freight: canary targets that break / canary maxFailures | %d / %d | |\n", r.failing, r.cfg.canaryMaxFailures)
	p("| Breach (threshold-crossing failure seen) → ThresholdBreached seen | %s (condition lastTransitionTime %s) | |\n",
		ms(b.breachSeen.Sub(b.crossing)), b.breachCondition.UTC().Format(time.TimeOnly))
	halt := b.lastBad.Sub(b.crossing)
	text := fmt.Sprintf("%s; %d created after the breach, %d after ThresholdBreached", ms(max(halt, 0)), b.afterCrossing, b.afterSeen)
	if halt < 0 {
		text = fmt.Sprintf("0 s: none created after the breach (the last %s before it)", ms(-halt))
	}
	p("| Breach → last new Promotion of the bad rollout | %s | %s |\n", text, goal(halt <= time.Second, "≤ 1 s"))
	rb := b.firstRollback.Sub(b.crossing)
	p("| Breach → first rollback Promotion | %s | %s |\n", ms(rb), goal(!b.firstRollback.IsZero() && rb <= 2*time.Second, "≤ 2 s"))
	p("| Bad rollout: target Promotions by wave / canary failures | %s / %d | |\n", byWave(b.badByWave), b.canaryFailed)
	p("| Rollback: targets, wall time (created → final) | %d, %s (%s) | |\n", b.rollback.promotions, ms(b.rollback.rolloutWall), b.rollback.phase)
	p("| Controller writes, bad rollout + rollback | %s | |\n", perTarget(b.writes, b.bad.promotions+b.rollback.promotions))
}

func (r *results) writeCommon(p printer) {
	cpu := fmt.Sprintf("expansion %.1f s", r.setup.cpu)
	peaks := fmt.Sprintf("expansion %.0f", float64(r.setup.peak)/mib)
	sim := fmt.Sprintf("expansion %.0f / %.0f", r.setup.sim.stages, r.setup.sim.promotions)
	for _, s := range []struct {
		name string
		sp   *span
	}{{"rollout", spanOf(r.good)}, {"breach and rollback", spanOfBreach(r.breach)}} {
		if s.sp == nil {
			continue
		}
		cpu += fmt.Sprintf(", %s %.1f s", s.name, s.sp.cpu)
		peaks += fmt.Sprintf(", %s %.0f", s.name, float64(s.sp.peak)/mib)
		sim += fmt.Sprintf(", %s %.0f / %.0f", s.name, s.sp.sim.stages, s.sp.sim.promotions)
	}
	p("| Controller CPU | %s | |\n", cpu)
	p("| Peak controller RSS (VmHWM; highest 200 ms sample) | %.0f MiB (%.0f MiB); %s MiB; Go heap at end %.0f MiB | %s |\n",
		float64(r.hwm)/mib, float64(r.peakRSS)/mib, peaks, r.heapBytes/mib, goal(r.hwm <= 300*mib, "≤ 300 MiB"))
	for _, s := range r.sizes {
		if s.kind != "FleetStage" && s.kind != "Freight" {
			p("| Largest object the controller writes | %s %s: %.1f KiB (status %.1f KiB) | < 1.5 MiB |\n", s.kind, s.name, float64(s.bytes)/1024, float64(s.statusBytes)/1024)
			break
		}
	}
	r.writeProbe(p)
	idle := "before any FleetStage (token minter, start-up)"
	if r.partition > 1 {
		idle = "before this partition's FleetStage (start-up and the partitions before it)"
	}
	p("| Controller writes %s | %.0f (%s) | |\n", idle, r.idle.total(), r.idle)
	p("| Events emitted by the controller | %d | |\n", r.eventTotal)
	p("| Kargo simulator reconciles (Stage / Promotion) | %s | |\n", sim)
}

func (r *results) writeProbe(p printer) {
	if pr := r.probe; pr != nil {
		verdict := fmt.Sprintf("stored: %.0f KiB, of which status %.0f KiB and managedFields %.0f KiB (%s)",
			float64(pr.bytes)/1024, float64(pr.status)/1024, float64(pr.managed)/1024, ms(pr.took))
		verdict += fmt.Sprintf("; one more Stage's entry then takes %s per patch", ms(pr.onePatch))
		if pr.managed == 0 {
			verdict += "; the API server dropped managedFields to fit the object under its size limit"
		}
		if !pr.accepted {
			verdict = fmt.Sprintf("REFUSED after %s (status alone %.0f KiB): %s", ms(pr.took), float64(pr.status)/1024, strutil.EllipsisRunes(pr.err, 160))
		}
		p("| Kargo's Freight status naming all %d target Stages (currentlyIn + verifiedIn) | %s | < 1.5 MiB |\n", pr.targets, verdict)
	}
}

func (r *results) writeDetails(p printer) {
	if r.good != nil {
		p("\n## Waves of the successful rollout\n\nIn flight: the mean number of targets in flight while the wave progressed " +
			"(from the rollout's status writes) against its maxConcurrent; a controller that starts targets as slots free keeps it near " +
			"the smaller of maxConcurrent and what is left of the wave.\n\n" +
			"| Wave | Targets | Succeeded | Started → finished | In flight (mean / maxConcurrent) |\n|---|---|---|---|---|\n")
		for _, wv := range r.good.waves {
			d := ""
			if wv.StartedAt != nil && wv.FinishedAt != nil {
				d = ms(wv.FinishedAt.Sub(wv.StartedAt.Time)) + " (1 s resolution)"
			}
			p("| %s | %d | %d | %s | %.0f / %d |\n", wv.Name, wv.Total, wv.Succeeded, d, r.good.slots[wv.Name].mean(),
				r.good.bound.maxConcurrent[wv.Name])
		}
	}
	p("\n## Objects (JSON as served, managedFields included)\n\n| Kind | Name | Size | Status | Written by |\n|---|---|---|---|---|\n")
	for _, s := range r.sizes {
		p("| %s | %s | %.1f KiB | %.1f KiB | %s |\n", s.kind, s.name, float64(s.bytes)/1024, float64(s.statusBytes)/1024, s.who)
	}
	p("\n## Events by reason\n\n")
	for _, k := range sortedKeys(r.events) {
		p("- %s: %d\n", k, r.events[k])
	}
	p("\n## kargo_fleet_* metrics at the end\n\n```\n%s\n```\n", strings.Join(r.metrics, "\n"))
}

func spanOf(r *rolloutResult) *span {
	if r == nil {
		return nil
	}
	return &r.span
}

func spanOfBreach(b *breachResult) *span {
	if b == nil {
		return nil
	}
	return &b.span
}

func waveSizes(waves []fleetv1alpha1.WaveProgress) string {
	parts := make([]string, 0, len(waves))
	for _, w := range waves {
		parts = append(parts, fmt.Sprintf("%s %d", w.Name, w.Total))
	}
	return strings.Join(parts, ", ")
}

func byWave(m map[string]int) string {
	parts := []string{}
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
