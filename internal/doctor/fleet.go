package doctor

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/argocd"
	"github.com/kargo-fleet/kargo-fleet/internal/inventory"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/plan"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
)

func isNoMatch(err error) bool { return meta.IsNoMatchError(err) }

// FleetStage runs the checks of one FleetStage, in order.
func (d *Doctor) FleetStage(ctx context.Context, fs *fleetv1alpha1.FleetStage) []Result {
	var stages kargo.StageList
	if err := d.c.List(ctx, &stages, client.InNamespace(fs.Namespace), client.MatchingLabels{fleetv1alpha1.FleetStageLabel: fs.Name}); err != nil {
		return []Result{fail(CheckArgoCDApps, "grant this user list on stages in "+fs.Namespace, "error listing the Stages of FleetStage %q: %v", fs.Name, err)}
	}
	var targets []kargo.Stage
	for i := range stages.Items {
		if stages.Items[i].Labels[fleetv1alpha1.RoleLabel] == fleetv1alpha1.RoleTarget {
			targets = append(targets, stages.Items[i])
		}
	}
	p, planner, planErr := d.plan(ctx, fs)
	return []Result{
		d.checkArgoCDApps(ctx, fs, targets),
		d.checkArgoCDDestinations(ctx, fs, targets),
		d.checkAutoPromotion(ctx, fs, targets),
		checkWindows(fs, p, planner, planErr, d.opts),
		checkThresholds(p, planErr),
		d.checkShards(ctx, fs, stages.Items),
		d.checkFreightCeiling(ctx, fs),
		d.checkBreakGlassGrants(ctx, fs),
		d.checkFreightPolicy(ctx, fs, p, planErr),
	}
}

// checkBreakGlassGrants warns when one of Kargo's control plane identities
// holds the break-glass verb on the FleetStage: the Promotion guard refuses
// break-glass from them whatever RBAC says (they act for others), but such
// a grant (a Kargo project admin can make one from the UI's YAML editor)
// is a mistake, or an attempt, to be removed.
func (d *Doctor) checkBreakGlassGrants(ctx context.Context, fs *fleetv1alpha1.FleetStage) Result {
	if d.opts.Access == nil {
		return ok(CheckBreakGlass, "not checked (no access reviews)")
	}
	ns := cmp.Or(d.opts.KargoNamespace, kargo.DefaultNamespace)
	var holders []string
	for _, sa := range kargo.ControlPlaneServiceAccounts {
		user := kargo.ControlPlaneUser(ns, sa)
		allowed, err := d.opts.Access.Allowed(ctx, authenticationv1.UserInfo{Username: user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}},
			authorizationv1.ResourceAttributes{Namespace: fs.Namespace, Group: fleetv1alpha1.GroupVersion.Group,
				Resource: "fleetstages", Name: fs.Name, Verb: rollout.BreakGlassVerb})
		if err != nil {
			return warn(CheckBreakGlass, "grant this user create on subjectaccessreviews", "error reviewing %s: %v", user, err)
		}
		if allowed {
			holders = append(holders, user)
		}
	}
	if len(holders) > 0 {
		return warn(CheckBreakGlass, fmt.Sprintf("remove the RoleBindings or ClusterRoleBindings granting %q on fleetstages to them "+
			"(kubectl get rolebindings,clusterrolebindings -A -o wide | grep kargo)", rollout.BreakGlassVerb),
			"Kargo's control plane holds break-glass on FleetStage %s/%s: %s; the Promotion guard refuses break-glass from "+
				"identities that act for others, whatever RBAC grants them", fs.Namespace, fs.Name, examples(holders))
	}
	return ok(CheckBreakGlass, "no Kargo control plane identity holds break-glass on FleetStage %s/%s", fs.Namespace, fs.Name)
}

// checkShards tells whether a Kargo controller reconciles each shard the
// FleetStage's Stages are on (ShardStates says how).
func (d *Doctor) checkShards(ctx context.Context, fs *fleetv1alpha1.FleetStage, stages []kargo.Stage) Result {
	var promos kargo.PromotionList
	if err := d.c.List(ctx, &promos, client.InNamespace(fs.Namespace)); err != nil {
		return fail(CheckShards, "grant this user list on promotions in "+fs.Namespace,
			"error listing the Promotions of Project %q: %v", fs.Namespace, err)
	}
	ours := make(map[string]bool, len(stages))
	for i := range stages {
		ours[stages[i].Name] = true
	}
	var mine []kargo.Promotion
	for i := range promos.Items {
		if ours[promos.Items[i].Spec.Stage] {
			mine = append(mine, promos.Items[i])
		}
	}
	timeout := cmp.Or(d.opts.ShardPickupTimeout, DefaultShardPickupTimeout)
	status, msg, fix := ShardVerdict(ShardStates(stages, mine, d.opts.Now, timeout), d.heartbeats(ctx), d.opts.Now, timeout)
	return Result{Check: CheckShards, Status: status, Message: msg, Fix: fix}
}

// heartbeats reads the Kargo controllers' heartbeat Leases in Kargo's
// namespace. A user who may not list them there gets the judgement by
// Stage statuses and Promotion phases, with the reason, not a failure:
// doctor is often run with a Project's rights only.
func (d *Doctor) heartbeats(ctx context.Context) Heartbeats {
	ns := cmp.Or(d.opts.KargoNamespace, kargo.DefaultNamespace)
	var leases coordinationv1.LeaseList
	if err := d.c.List(ctx, &leases, client.InNamespace(ns), client.HasLabels{kargo.ControllerLabel}); err != nil {
		return Heartbeats{Namespace: ns, ReadErr: err}
	}
	return ReadHeartbeats(ns, leases.Items, d.opts.Now)
}

// checkFreightCeiling estimates the status of a Freight promoted through
// every Stage of the Project (Kargo keeps an entry per Stage on each
// Freight) against the API server's object size limit.
func (d *Doctor) checkFreightCeiling(ctx context.Context, fs *fleetv1alpha1.FleetStage) Result {
	var stages metav1.PartialObjectMetadataList
	stages.SetGroupVersionKind(kargo.GroupVersion.WithKind("StageList"))
	if err := d.c.List(ctx, &stages, client.InNamespace(fs.Namespace)); err != nil {
		return fail(CheckFreightCeiling, "grant this user list on stages in "+fs.Namespace,
			"error listing the Stages of Project %q: %v", fs.Namespace, err)
	}
	names := make([]string, len(stages.Items))
	for i := range stages.Items {
		names[i] = stages.Items[i].Name
	}
	status, msg := FreightCeilingVerdict(fs.Namespace, names)
	if status != StatusOK {
		return warn(CheckFreightCeiling, "split the fleet across Projects, each with its own Warehouse and FleetStage (docs/shards.md)", "%s", msg)
	}
	return ok(CheckFreightCeiling, "%s", msg)
}

// plan plans the FleetStage over its inventory, as the controller does.
func (d *Doctor) plan(ctx context.Context, fs *fleetv1alpha1.FleetStage) (*plan.WavePlan, *plan.Planner, error) {
	planner, errs := plan.Compile(&fs.Spec)
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("FleetStage %q is invalid: %w", fs.Name, errs.ToAggregate())
	}
	candidates, err := inventory.NewReader(d.c).Read(ctx, fs)
	if err != nil {
		return nil, nil, fmt.Errorf("error reading the targets of FleetStage %q: %w", fs.Name, err)
	}
	ns := &corev1.Namespace{}
	if err := d.c.Get(ctx, client.ObjectKey{Name: fs.Namespace}, ns); err != nil {
		return nil, nil, fmt.Errorf("error getting Project namespace %q: %w", fs.Namespace, err)
	}
	teams, present := ns.Annotations[fleetv1alpha1.AllowedTeamsAnnotation]
	return planner.Plan(plan.PlanInput{Seed: fs.Namespace + "/" + fs.Name, Candidates: candidates,
		AllowedTeams: plan.ParseAllowedTeams(teams, present)}), planner, nil
}

func (d *Doctor) checkArgoCDApps(ctx context.Context, fs *fleetv1alpha1.FleetStage, targets []kargo.Stage) Result {
	fix := fmt.Sprintf("annotate each target's Application %s: <project>:<target Stage> "+
		"(kargo-fleet targets %s -n %s -o json lists the values; see docs/argocd.md)", kargo.AuthorizedStageAnnotation, fs.Name, fs.Namespace)
	if len(targets) == 0 {
		return warn(CheckArgoCDApps, "wait for the FleetStage to be Ready (kargo-fleet status)",
			"FleetStage %s has no target Stage yet: Applications not checked", fs.Name)
	}
	apps := map[string]*Applications{}
	var problems []AppProblem
	var undeterminable []string
	checked, withArgo := 0, 0
	for i := range targets {
		st := &targets[i]
		refs, undet := targetAppRefs(fs, st)
		for _, alias := range undet {
			undeterminable = append(undeterminable, st.Name+" step "+alias)
		}
		if len(refs)+len(undet) > 0 {
			withArgo++
		}
		for _, ref := range refs {
			if _, read := apps[ref.Namespace]; read {
				continue
			}
			list, err := d.listApplications(ctx, ref.Namespace)
			if isNoMatch(err) {
				return warn(CheckArgoCDApps, "run doctor against the cluster Kargo's Argo CD integration uses",
					"this cluster serves no Argo CD Application kind: the argocd-update steps of %d target Stage(s) not checked", len(targets))
			}
			if err != nil {
				return fail(CheckArgoCDApps, "grant this user list on applications.argoproj.io in "+ref.Namespace,
					"error listing Argo CD Applications in namespace %q: %v", ref.Namespace, err)
			}
			apps[ref.Namespace] = NewApplications(list)
		}
		if len(refs) > 0 {
			checked++
		}
		problems = append(problems, AuthorizeApps(fs.Namespace, st.Name, refs, apps)...)
	}
	if len(problems) > 0 {
		items := make([]string, 0, len(problems))
		missing := 0
		for _, p := range problems {
			if p.Missing {
				missing++
				items = append(items, fmt.Sprintf("%s for Stage %s not found", p.Ref, p.Stage))
			} else {
				items = append(items, fmt.Sprintf("%s does not authorize Stage %s:%s (%s)", p.Ref, fs.Namespace, p.Stage, p.Reason))
			}
		}
		return fail(CheckArgoCDApps, fix, "%d Application reference(s) of %d target Stage(s) will make argocd-update error "+
			"(%d not found, %d not authorized): %s", len(problems), len(targets), missing, len(problems)-missing, examples(items))
	}
	switch {
	case withArgo == 0:
		return ok(CheckArgoCDApps, "the target template has no argocd-update step: nothing to authorize")
	case len(undeterminable) > 0:
		return warn(CheckArgoCDApps, "check these Applications by hand, or name them from ${{ vars.* }} and ${{ ctx.stage }} only",
			"%d target Stage(s) checked; the Applications of %d step(s) are only known at promotion time: %s",
			checked, len(undeterminable), examples(undeterminable))
	}
	return ok(CheckArgoCDApps, "the Applications of all %d target Stage(s) exist and authorize their Stage", checked)
}

// listApplications lists the Argo CD Applications of a namespace as
// unstructured objects (kargo-fleet has no Argo CD types).
func (d *Doctor) listApplications(ctx context.Context, namespace string) ([]AppMeta, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("argoproj.io/v1alpha1")
	list.SetKind("ApplicationList")
	if err := d.c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	out := make([]AppMeta, 0, len(list.Items))
	for i := range list.Items {
		a := &list.Items[i]
		app, err := argocd.FromUnstructured(a.Object)
		if err != nil {
			return nil, err
		}
		out = append(out, AppMeta{Name: a.GetName(), Labels: a.GetLabels(), Annotations: a.GetAnnotations(), App: app})
	}
	return out, nil
}

func (d *Doctor) checkAutoPromotion(ctx context.Context, fs *fleetv1alpha1.FleetStage, targets []kargo.Stage) Result {
	cfg := &kargo.ProjectConfig{}
	if err := d.c.Get(ctx, client.ObjectKey{Namespace: fs.Namespace, Name: fs.Namespace}, cfg); err != nil {
		if apierrors.IsNotFound(err) || isNoMatch(err) {
			return ok(CheckAutoPromotion, "Project %s has no ProjectConfig: no Stage auto-promotes", fs.Namespace)
		}
		return fail(CheckAutoPromotion, "grant this user get on projectconfigs in "+fs.Namespace, "error reading ProjectConfig %s/%s: %v",
			fs.Namespace, fs.Namespace, err)
	}
	fix := fmt.Sprintf("narrow or remove the promotion policies of ProjectConfig %s/%s so that they select no target Stage "+
		"(names %s.*) and no wave Stage after the first", fs.Namespace, fs.Namespace, fs.Name)
	metas := make([]metav1.ObjectMeta, 0, len(targets))
	for i := range targets {
		metas = append(metas, targets[i].ObjectMeta)
	}
	onTargets, err := AutoPromotingStages(cfg, metas)
	if err != nil {
		return fail(CheckAutoPromotion, "fix the ProjectConfig's promotion policies", "ProjectConfig %s/%s: %v", fs.Namespace, fs.Namespace, err)
	}
	var waves []metav1.ObjectMeta
	for i, w := range fs.Spec.Waves {
		if i == 0 {
			continue
		}
		waves = append(waves, metav1.ObjectMeta{Name: render.WaveStageName(fs.Name, w.Name), Namespace: fs.Namespace,
			Labels: map[string]string{fleetv1alpha1.FleetStageLabel: fs.Name, fleetv1alpha1.RoleLabel: fleetv1alpha1.RoleWave,
				fleetv1alpha1.WaveLabel: w.Name}})
	}
	onWaves, err := AutoPromotingStages(cfg, waves)
	if err != nil {
		return fail(CheckAutoPromotion, "fix the ProjectConfig's promotion policies", "ProjectConfig %s/%s: %v", fs.Namespace, fs.Namespace, err)
	}
	switch {
	case len(onTargets) > 0:
		return fail(CheckAutoPromotion, fix, "%d target Stage(s) auto-promote: Kargo would put any Freight verified upstream on "+
			"those targets, held back or not, without the fleet: %s", len(onTargets), examples(onTargets))
	case len(onWaves) > 0:
		return warn(CheckAutoPromotion, fix, "wave Stage(s) after the first auto-promote: an approval for a later wave "+
			"starts it before the earlier waves passed (the fleet-wave step then refuses it): %s", examples(onWaves))
	}
	return ok(CheckAutoPromotion, "no target Stage and no wave Stage after the first auto-promotes")
}

func checkWindows(fs *fleetv1alpha1.FleetStage, p *plan.WavePlan, planner *plan.Planner, planErr error, opts Options) Result {
	if len(fs.Spec.Policy.Windows) == 0 {
		return ok(CheckChangeWindows, "no change windows: targets may start at any time")
	}
	if planErr != nil {
		return warn(CheckChangeWindows, "fix the error and run doctor again", "change windows not checked: %v", planErr)
	}
	never := NeverAllowed(p, planner.Policy(), opts.Now)
	if len(never) > 0 {
		return fail(CheckChangeWindows, "change spec.policy.windows so that an allow window opens while no deny window covers it",
			"%d of %d target(s) never get an open change window: %s", len(never), p.Members(), examples(never))
	}
	return ok(CheckChangeWindows, "every target gets an open change window (%d window(s))", len(fs.Spec.Policy.Windows))
}

func checkThresholds(p *plan.WavePlan, planErr error) Result {
	if planErr != nil {
		return warn(CheckFailureHalts, "fix the error and run doctor again", "failure thresholds not checked: %v", planErr)
	}
	never := NeverHalting(p)
	if len(never) > 0 {
		return warn(CheckFailureHalts, "lower spec.waves[].maxFailures below the wave's size (e.g. 10%)",
			"wave(s) that can never halt, every target may fail: %s", examples(never))
	}
	waves := make([]string, 0, len(p.Waves))
	for _, w := range p.Waves {
		waves = append(waves, w.Name)
	}
	return ok(CheckFailureHalts, "every wave halts before all its targets fail (%s)", examples(waves))
}

// targetAppRefs returns the Applications a target Stage's argocd-update
// steps name, and the steps whose Applications are only known at promotion
// time.
func targetAppRefs(fs *fleetv1alpha1.FleetStage, st *kargo.Stage) ([]AppRef, []string) {
	if st.Spec.PromotionTemplate == nil {
		return nil, nil
	}
	vars := StageVars(append(slices.Clone(st.Spec.PromotionTemplate.Spec.Vars), st.Spec.Vars...), fs.Namespace, st.Name)
	return ArgoCDAppRefs(st.Spec.PromotionTemplate.Spec.Steps, vars, fs.Namespace, st.Name)
}
