package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/cli"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/kargosim"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/report"
)

// createProject creates the Project and everything in it.
func (s *story) createProject(ctx context.Context) (string, error) {
	sc := s.o.Scenario
	// The Project only: Kargo's Project webhook creates its namespace. A
	// namespace created just before would race the webhook's cache.
	objs := []client.Object{
		&kargo.Project{ObjectMeta: metav1.ObjectMeta{Name: Project}},
		WarehouseObject(),
	}
	for _, f := range Freight(s.o.Clock.Now()) {
		objs = append(objs, f)
	}
	objs = append(objs, sc.Stage(), sc.FleetStage())
	for _, o := range objs {
		if err := s.c.Create(ctx, o); err != nil {
			return "", fmt.Errorf("error creating %T %q: %w", o, o.GetName(), err)
		}
	}
	p, err := sc.Preview()
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(p.Waves))
	for i := range p.Waves {
		w := &p.Waves[i]
		part := fmt.Sprintf("%s %d", w.Name, len(w.Members))
		if w.Approval == fleetv1alpha1.ApprovalRequired {
			part += " (approval)"
		}
		parts = append(parts, part)
	}
	canary, _ := p.Wave(WaveCanary)
	return fmt.Sprintf("waves %s; %s breaks %d of the %d canary targets (eu regions), %d may fail",
		strings.Join(parts, ", "), BadAlias, Breakable(canary), len(canary.Members), canary.MaxFailures), nil
}

// fleetReady waits until the FleetStage generated its Stages and the step
// token exists.
func (s *story) fleetReady(ctx context.Context) (string, error) {
	want := s.o.Scenario.Targets
	var last string
	err := s.poll(ctx, func(ctx context.Context) (bool, error) {
		fs, err := s.fleetStage(ctx)
		if err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(fs.Status.Conditions, fleetv1alpha1.ReadyCondition)
		var stages kargo.StageList
		if err := s.c.List(ctx, &stages, client.InNamespace(Project),
			client.MatchingLabels{fleetv1alpha1.FleetStageLabel: FleetStageName}); err != nil {
			return false, err
		}
		waves, targets := 0, 0
		for _, st := range stages.Items {
			switch st.Labels[fleetv1alpha1.RoleLabel] {
			case fleetv1alpha1.RoleWave:
				waves++
			case fleetv1alpha1.RoleTarget:
				targets++
			}
		}
		token := s.c.Get(ctx, client.ObjectKey{Namespace: Project, Name: fleetv1alpha1.StepTokenSecretName}, &corev1.Secret{})
		last = fmt.Sprintf("%d wave Stages, %d of %d target Stages, step token present: %t", waves, targets, want, token == nil)
		if ready != nil {
			last += fmt.Sprintf(", Ready=%s (%s: %s)", ready.Status, ready.Reason, ready.Message)
		} else {
			last += ", no Ready condition yet"
		}
		return ready != nil && ready.Status == metav1.ConditionTrue && waves == 4 && targets == want && token == nil, nil
	})
	if err != nil {
		return last, fmt.Errorf("%w; last seen: %s", err, last)
	}
	return last, nil
}

// phaseGood promotes the good Freight into the pilot wave and follows the
// rollout until it ends, approving the critical wave when it asks.
func (s *story) phaseGood(ctx context.Context) (string, error) {
	if err := s.promote(ctx, s.good); err != nil {
		return "", err
	}
	approved := false
	var ro *fleetv1alpha1.FleetRollout
	err := s.follow(ctx, fmt.Sprintf("Phase 1: %s (good) promoted into %s", GoodAlias, s.waveStage(WavePilot)),
		func(ctx context.Context, v *view) (bool, error) {
			ro = v.forward(s.good)
			if ro == nil {
				return false, nil
			}
			if w := wave(ro, WaveCritical); w != nil && w.Phase == fleetv1alpha1.WaveWaitingForApproval && !approved {
				if v.waitedFor(WaveCritical) < approvalPause {
					return false, nil
				}
				if err := kargosim.Approve(ctx, s.c, client.ObjectKey{Namespace: Project, Name: s.good},
					s.waveStage(WaveCritical)); err != nil {
					return false, err
				}
				approved = true
				v.note("operator: " + kargo.ApproveCommand(Project, GoodAlias, s.waveStage(WaveCritical)))
			}
			switch ro.Status.Phase {
			case fleetv1alpha1.RolloutSucceeded:
				return true, nil
			case fleetv1alpha1.RolloutFailed, fleetv1alpha1.RolloutAborted, fleetv1alpha1.RolloutSuperseded,
				fleetv1alpha1.RolloutHalted:
				return true, fmt.Errorf("FleetRollout %s ended %s: %s", ro.Name, ro.Status.Phase, ro.Status.Message)
			}
			return false, nil
		})
	if err != nil {
		return "", s.explain(ctx, err, s.good)
	}
	for _, w := range ro.Status.Waves {
		if w.Phase != fleetv1alpha1.WaveSucceeded || w.Succeeded != w.Total {
			return "", fmt.Errorf("FleetRollout %s succeeded but wave %s is %s with %d of %d targets succeeded",
				ro.Name, w.Name, w.Phase, w.Succeeded, w.Total)
		}
	}
	if !approved {
		return "", errors.New("the critical wave never waited for approval")
	}
	detail := fmt.Sprintf("FleetRollout %s Succeeded: %s", ro.Name, waveSummary(ro))
	if s.analysisOn() {
		passed, err := canaryAnalysisPassed(ro)
		if err != nil {
			return "", err
		}
		detail += "; " + passed
	}
	return detail, nil
}

// checkGood checks that every target runs the good Freight.
func (s *story) checkGood(ctx context.Context) (string, error) {
	var detail string
	err := s.poll(ctx, func(ctx context.Context) (bool, error) {
		counts, err := s.targetFreight(ctx)
		if err != nil {
			return false, err
		}
		fs, err := s.fleetStage(ctx)
		if err != nil {
			return false, err
		}
		lastGood := ""
		if fs.Status.LastGoodFreight != nil {
			lastGood = fs.Status.LastGoodFreight.Name
		}
		detail = fmt.Sprintf("targets by Freight: %s; last good Freight: %s", s.describeCounts(counts), s.alias(lastGood))
		return counts[s.good] == s.o.Scenario.Targets && lastGood == s.good, nil
	})
	if err != nil {
		return detail, fmt.Errorf("%w; last seen: %s", err, detail)
	}
	return detail, nil
}

// phaseBad promotes the bad Freight and follows it until its rollout halted
// and the automatic rollback finished.
func (s *story) phaseBad(ctx context.Context) (string, error) {
	ro, rb, err := s.haltAndRollBack(ctx, s.bad, fmt.Sprintf("Phase 2: %s (bad) promoted into %s", BadAlias,
		s.waveStage(WavePilot)))
	if err != nil {
		return "", err
	}
	canary := wave(ro, WaveCanary)
	if canary == nil {
		return "", fmt.Errorf("FleetRollout %s has no canary wave", ro.Name)
	}
	if canary.Phase != fleetv1alpha1.WaveHalted && canary.Phase != fleetv1alpha1.WaveFailed {
		return "", fmt.Errorf("the canary wave of FleetRollout %s is %s, not Halted", ro.Name, canary.Phase)
	}
	fs, err := s.fleetStage(ctx)
	if err != nil {
		return "", err
	}
	s.canaryFailed, s.canaryMax = int(canary.Failed), maxFailures(fs, WaveCanary, int(canary.Total))
	if s.canaryFailed <= s.canaryMax {
		return "", fmt.Errorf("the canary wave halted with %d failures, within its allowance of %d", s.canaryFailed, s.canaryMax)
	}
	return fmt.Sprintf("FleetRollout %s %s: canary %d of %d failed (at most %d may); rollback %s Succeeded (%d targets)",
		ro.Name, ro.Status.Phase, canary.Failed, canary.Total, s.canaryMax, rb.Name, s.movedBack), nil
}

// haltAndRollBack promotes freight into the pilot wave and follows its
// rollout until it halted and the automatic rollback of it Succeeded; it
// counts the targets the rollback moved.
func (s *story) haltAndRollBack(ctx context.Context, freight, title string) (ro, rb *fleetv1alpha1.FleetRollout, _ error) {
	if err := s.promote(ctx, freight); err != nil {
		return nil, nil, err
	}
	err := s.follow(ctx, title,
		func(_ context.Context, v *view) (bool, error) {
			ro = v.forward(freight)
			if ro == nil {
				return false, nil
			}
			if ro.Status.Phase == fleetv1alpha1.RolloutSucceeded {
				return true, fmt.Errorf("FleetRollout %s Succeeded: %s passed every wave, the canary wave did not halt it",
					ro.Name, s.alias(freight))
			}
			rb = v.rollbackOf(ro.Name)
			if rb == nil {
				return false, nil
			}
			if !rb.Status.Phase.IsFinal() {
				return false, nil
			}
			if rb.Status.Phase != fleetv1alpha1.RolloutSucceeded {
				return true, fmt.Errorf("rollback FleetRollout %s ended %s: %s", rb.Name, rb.Status.Phase, rb.Status.Message)
			}
			// The halted rollout settles once its in-flight targets finished.
			return ro.Status.Phase != fleetv1alpha1.RolloutProgressing && ro.Status.Phase != fleetv1alpha1.RolloutPending, nil
		})
	if err != nil {
		if ro == nil {
			return nil, nil, s.explain(ctx, err, freight)
		}
		if rb == nil {
			return nil, nil, fmt.Errorf("%w; FleetRollout %s is %s (%s) and no automatic rollback of it exists", err, ro.Name,
				ro.Status.Phase, ro.Status.Message)
		}
		return nil, nil, err
	}
	s.movedBack = 0
	for _, w := range rb.Status.Waves {
		s.movedBack += w.Succeeded
	}
	return ro, rb, nil
}

// checkContained checks that the bad Freight reached no target of the
// general and critical waves, and was never verified in the canary wave
// Stage (which is what would have let general take it).
func (s *story) checkContained(ctx context.Context) (string, error) {
	return s.contained(ctx, s.bad)
}

// contained checks that freight reached no target of the general and
// critical waves, and was never verified in the canary wave Stage.
func (s *story) contained(ctx context.Context, freight string) (string, error) {
	alias := s.alias(freight)
	var promos kargo.PromotionList
	if err := s.c.List(ctx, &promos, client.InNamespace(Project)); err != nil {
		return "", err
	}
	var stages kargo.StageList
	if err := s.c.List(ctx, &stages, client.InNamespace(Project),
		client.MatchingLabels{fleetv1alpha1.FleetStageLabel: FleetStageName}); err != nil {
		return "", err
	}
	waveOf, isTarget := map[string]string{}, map[string]bool{}
	for _, st := range stages.Items {
		waveOf[st.Name] = st.Labels[fleetv1alpha1.WaveLabel]
		isTarget[st.Name] = st.Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget
	}
	later := map[string]bool{WaveGeneral: true, WaveCritical: true}
	perWave := map[string]int{}
	for _, p := range promos.Items {
		if p.Spec.Freight != freight {
			continue
		}
		w := waveOf[p.Spec.Stage]
		if isTarget[p.Spec.Stage] {
			perWave[w]++
		}
		if later[w] {
			return "", fmt.Errorf("promotion %s put %s on Stage %s of wave %s (phase %s)", p.Name, alias, p.Spec.Stage, w,
				p.Status.Phase)
		}
	}
	for _, st := range stages.Items {
		if !later[waveOf[st.Name]] {
			continue
		}
		for _, name := range st.CurrentFreightNames() {
			if name == freight {
				return "", fmt.Errorf("stage %s runs %s", st.Name, alias)
			}
		}
	}
	var f kargo.Freight
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: Project, Name: freight}, &f); err != nil {
		return "", err
	}
	if f.IsVerifiedIn(s.waveStage(WaveCanary)) {
		return "", fmt.Errorf("freight %s is verified in %s: general could take it", alias, s.waveStage(WaveCanary))
	}
	return fmt.Sprintf("target Promotions of %s: pilot %d, canary %d, general 0, critical 0; not verified in %s",
		alias, perWave[WavePilot], perWave[WaveCanary], s.waveStage(WaveCanary)), nil
}

// checkRolledBack checks that every target runs the good Freight again.
func (s *story) checkRolledBack(ctx context.Context) (string, error) {
	counts, err := s.targetFreight(ctx)
	if err != nil {
		return "", err
	}
	detail := "targets by Freight: " + s.describeCounts(counts)
	if counts[s.good] != s.o.Scenario.Targets {
		return detail, fmt.Errorf("not every target runs %s: %s", GoodAlias, detail)
	}
	return fmt.Sprintf("%s; the rollback promoted %s to %d targets", detail, GoodAlias, s.movedBack), nil
}

// promote creates a Promotion of freight into the pilot wave Stage, as
// `kargo promote --stage prod-pilot --freight ...` does.
func (s *story) promote(ctx context.Context, freight string) error {
	p := kargo.NewPromotion(Project, s.waveStage(WavePilot), freight, nil, nil)
	if err := s.c.Create(ctx, p); err != nil {
		return fmt.Errorf("error promoting %s into %s: %w", s.alias(freight), s.waveStage(WavePilot), err)
	}
	return nil
}

// targetFreight counts target Stages by the Freight they run ("" = none).
func (s *story) targetFreight(ctx context.Context) (map[string]int, error) {
	var stages kargo.StageList
	if err := s.c.List(ctx, &stages, client.InNamespace(Project), client.MatchingLabels{
		fleetv1alpha1.FleetStageLabel: FleetStageName, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleTarget,
	}); err != nil {
		return nil, fmt.Errorf("error listing target Stages: %w", err)
	}
	counts := map[string]int{}
	for _, st := range stages.Items {
		names := st.CurrentFreightNames()
		if len(names) == 0 {
			counts[""]++
			continue
		}
		counts[names[0]]++
	}
	return counts, nil
}

func (s *story) describeCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := s.alias(k)
		if k == "" {
			name = "none"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, counts[k]))
	}
	return strings.Join(parts, ", ")
}

func (s *story) fleetStage(ctx context.Context) (*fleetv1alpha1.FleetStage, error) {
	fs := &fleetv1alpha1.FleetStage{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: Project, Name: FleetStageName}, fs); err != nil {
		return nil, fmt.Errorf("error getting FleetStage %s: %w", FleetStageName, err)
	}
	return fs, nil
}

func (s *story) waveStage(w string) string { return render.WaveStageName(FleetStageName, w) }

// alias names a Freight of the story by its alias.
func (s *story) alias(name string) string {
	switch name {
	case s.good:
		return GoodAlias
	case s.bad:
		return BadAlias
	case FreightName(ErrorAlias):
		return ErrorAlias
	}
	return name
}

// explain adds, to an error of a phase, what the wave Promotions of the
// Freight were doing: where the story stopped.
func (s *story) explain(ctx context.Context, err error, freight string) error {
	var promos kargo.PromotionList
	if lerr := s.c.List(ctx, &promos, client.InNamespace(Project)); lerr != nil {
		return err
	}
	var lines []string
	for _, p := range promos.Items {
		if p.Spec.Freight != freight || !strings.HasPrefix(p.Spec.Stage, FleetStageName+"-") {
			continue
		}
		step := ""
		if n := int(p.Status.CurrentStep); n < len(p.Status.StepExecutionMetadata) {
			step = fmt.Sprintf(", step %q", p.Status.StepExecutionMetadata[n].Alias)
		}
		lines = append(lines, fmt.Sprintf("wave Promotion %s: %s%s: %s", p.Name, p.Status.Phase, step, p.Status.Message))
	}
	if len(lines) == 0 {
		lines = append(lines, fmt.Sprintf("no wave Promotion of %s exists", s.alias(freight)))
	}
	slices.Sort(lines)
	return fmt.Errorf("%w\n    %s", err, strings.Join(lines, "\n    "))
}

// wave returns a rollout's progress of one wave.
func wave(ro *fleetv1alpha1.FleetRollout, name string) *fleetv1alpha1.WaveProgress {
	for i := range ro.Status.Waves {
		if ro.Status.Waves[i].Name == name {
			return &ro.Status.Waves[i]
		}
	}
	return nil
}

// waveSummary says how each wave ended: "pilot 2/2, canary 20/20, ...".
func waveSummary(ro *fleetv1alpha1.FleetRollout) string {
	parts := make([]string, 0, len(ro.Status.Waves))
	for _, w := range ro.Status.Waves {
		parts = append(parts, fmt.Sprintf("%s %d/%d", w.Name, w.Succeeded, w.Total))
	}
	return strings.Join(parts, ", ")
}

// status runs `kargo-fleet status` on the FleetStage through the
// kubeconfig, with args, and returns what it printed.
func (s *story) status(ctx context.Context, args ...string) ([]byte, error) {
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(&out, &errOut)
	cmd.SetArgs(append([]string{"status", FleetStageName, "-n", Project, "--kubeconfig", s.kubeconfig}, args...))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.ExecuteContext(ctx); err != nil {
		return nil, fmt.Errorf("kargo-fleet status: %w: %s", err, errOut.String())
	}
	return out.Bytes(), nil
}

// maxFailures resolves a wave's failure allowance as the planner does
// (a percentage rounds down).
func maxFailures(fs *fleetv1alpha1.FleetStage, name string, total int) int {
	for _, w := range fs.Spec.Waves {
		if w.Name == name && w.MaxFailures != nil {
			n, err := intstr.GetScaledValueFromIntOrPercent(w.MaxFailures, total, false)
			if err == nil {
				return n
			}
		}
	}
	return 0
}

// statusSettle is how long the status command may take to show what the
// target Stages already say.
const statusSettle = 15 * time.Second

// checkStatusCommand runs `kargo-fleet status` as an operator would,
// through the kubeconfig, and checks what it reports; then shows it.
func (s *story) checkStatusCommand(ctx context.Context) (string, error) {
	run := func(args ...string) ([]byte, error) { return s.status(ctx, args...) }
	// The FleetStage's version distribution is refreshed a few seconds
	// after target Stages change Freight: give it that long.
	var r report.Report
	for deadline := time.Now().Add(statusSettle); ; {
		raw, err := run("-o", "json")
		if err != nil {
			return "", err
		}
		r = report.Report{}
		if err := json.Unmarshal(raw, &r); err != nil {
			return "", fmt.Errorf("kargo-fleet status -o json printed no report: %w", err)
		}
		if len(r.FleetStage.Versions) == 1 && r.FleetStage.Versions[0].Freight.Name == s.good &&
			int(r.FleetStage.Versions[0].Targets) == s.o.Scenario.Targets {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("kargo-fleet status reports versions %+v, not %d targets on %s", r.FleetStage.Versions,
				s.o.Scenario.Targets, GoodAlias)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	if r.FleetStage.LastGoodFreight == nil || r.FleetStage.LastGoodFreight.Alias != GoodAlias {
		return "", fmt.Errorf("kargo-fleet status reports last good Freight %+v, not %s", r.FleetStage.LastGoodFreight, GoodAlias)
	}
	text, err := run("--color", map[bool]string{true: "always", false: "never"}[s.o.Color])
	if err != nil {
		return "", err
	}
	fmt.Fprintf(s.out, "$ kargo-fleet status %s -n %s --kubeconfig %s\n%s", FleetStageName, Project, s.kubeconfig, text)
	return fmt.Sprintf("%d rollouts shown; versions: %s %d", len(r.Rollouts), GoodAlias, r.FleetStage.Versions[0].Targets), nil
}
