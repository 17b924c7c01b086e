package fleetrollouts

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/fleetstage/controller/fleetplan"
	"github.com/kargo-fleet/kargo-fleet/internal/cacheindex"
	"github.com/kargo-fleet/kargo-fleet/internal/fleetrollout"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/personrights"
	"github.com/kargo-fleet/kargo-fleet/internal/policyread"
	"github.com/kargo-fleet/kargo-fleet/internal/provenance"
	"github.com/kargo-fleet/kargo-fleet/internal/rollout"
	"github.com/kargo-fleet/kargo-fleet/internal/rolloutstore"
	"github.com/kargo-fleet/kargo-fleet/internal/stagerecord"
	"github.com/kargo-fleet/kargo-fleet/internal/strutil"
)

// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fleet.kargo-fleet.io,resources=fleetrollouts/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=promotions,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=stages,verbs=promote
// +kubebuilder:rbac:groups=kargo.akuity.io,resources=freights,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create
// +kubebuilder:rbac:groups="",resources=events,verbs=create

// statusInterval is the least time between two progress-only status writes
// of one rollout: at 10,000 targets every Promotion finishing would otherwise
// be a write. Phase and wave changes are written at once; counts as
// rollout.ProgressWriteDue says.
const statusInterval = rollout.ProgressWriteInterval

// RefreshFunc asks Kargo to run a Promotion's polling step again now.
type RefreshFunc func(ctx context.Context, c client.Client, namespace, promotion string) error

// FleetRolloutReconciler moves a FleetStage's targets to a Freight wave by
// wave: it creates target Promotions within concurrency, constraints and
// windows, judges them, halts on a breached threshold, and rolls back.
type FleetRolloutReconciler struct {
	// marker marks the target Promotions it creates.
	marker    *provenance.Marker
	client    client.Client
	reader    client.Reader // uncached reads (plan snapshots, rollback targets)
	inventory fleetplan.Inventory
	recorder  events.EventRecorder
	clock     clock.Clock
	refresh   RefreshFunc
	metrics   *rolloutMetrics
	records   *stagerecord.Reader
	// id names this controller process in the Promotion batches it claims.
	id string
	// DashboardURL is the fleet dashboard's base URL; the wave Stages'
	// descriptions link to it. Empty: no link.
	DashboardURL string

	// In-memory state, rebuilt from the API server after a restart and
	// dropped when a rollout is deleted.
	snapshots snapshots
	expected  expectations
	refused   refusals
	taken     takenNames
	failures  failureSignal
	landed    landedClaims
	mu        sync.Mutex
	lastWrite map[types.UID]time.Time
	// batchHeld is when each rollout's decisions began holding back a
	// batch too small to start.
	batchHeld map[types.UID]time.Time
	// lastDecided is what each forward rollout's last decision saw (pace.go).
	lastDecided map[types.UID]decided
	uids        map[types.NamespacedName]types.UID
	described   map[types.NamespacedName]described
	// analyses caches compiled wave analyses and Prometheus clients.
	analyses analyses
	// policies reads the FreightPolicies and Freight artifacts members
	// are checked against.
	policies *policyread.Reader
	// self, rights and gestures: the fleet actions of Kargo UI aborts
	// (fleetrollout_gestures.go).
	self     string
	rights   *personrights.Checker
	gestures refusedGestures
	// approvals are the approvals recorded (fleetrollout_approvals.go).
	approvals approvalsRecorded

	// ownPromotions and targetStages read a rollout's Promotions and a
	// fleet's target Stages from the cache without copying them.
	ownPromotions *cacheindex.Index[*kargo.Promotion]
	targetStages  *cacheindex.Index[*kargo.Stage]
}

var _ reconcile.Reconciler = &FleetRolloutReconciler{}

// NewFleetRolloutReconciler returns a FleetRollout reconciler. reader must
// not be cached (plan snapshots are read once, through it); refresh may be nil.
func NewFleetRolloutReconciler(c client.Client, reader client.Reader, inv fleetplan.Inventory, rec events.EventRecorder,
	clk clock.Clock, refresh RefreshFunc) *FleetRolloutReconciler {
	own, targets := newCacheIndexes()
	return &FleetRolloutReconciler{client: c, reader: reader, inventory: inv, recorder: rec, clock: clk, refresh: refresh,
		metrics: defaultRolloutMetrics, id: newControllerID(), lastWrite: map[types.UID]time.Time{}, batchHeld: map[types.UID]time.Time{}, lastDecided: map[types.UID]decided{}, uids: map[types.NamespacedName]types.UID{},
		described: map[types.NamespacedName]described{},
		records:   stagerecord.NewReader(reader), ownPromotions: own, targetStages: targets,
		policies: policyread.NewReader(c, reader)}
}

// WithStageRecords makes the reconciler read Stage records with records,
// shared with the other readers of records in the process.
func (r *FleetRolloutReconciler) WithStageRecords(records *stagerecord.Reader) *FleetRolloutReconciler {
	r.records = records
	return r
}

// WithMarker makes the reconciler mark the target Promotions it creates,
// so the target guard tells them from Promotions others made with the same
// labels.
func (r *FleetRolloutReconciler) WithMarker(m *provenance.Marker) *FleetRolloutReconciler {
	r.marker = m
	return r
}

// scope carries what one reconcile learns and decides. status is the
// status the reconcile computes; it is written once, at the end.
type scope struct {
	ro     *fleetv1alpha1.FleetRollout
	fs     *fleetv1alpha1.FleetStage
	status *fleetv1alpha1.FleetRolloutStatus
	// obs and decision are set once the rollout was observed and decided.
	obs      *rollout.Observed
	decision *rollout.Decision
	// waiting is true while the rollout waits for its turn.
	waiting bool
	// describeAgain is how soon a wave Stage description held back to
	// coalesce count changes is due.
	describeAgain time.Duration
	// writeRetry is how soon a progress-only status write held back is
	// due at the latest.
	writeRetry time.Duration
}

// Reconcile moves one FleetRollout forward. Its phases compute the new
// status into the scope; one deferred write records it, and the follow-ups
// of a recorded change (Events, Kargo refreshes, the FleetStage's record,
// the rollout history) happen only once it is recorded.
func (r *FleetRolloutReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	start := r.clock.Now()
	defer func() { r.metrics.reconcileSeconds.Observe(r.clock.Since(start).Seconds()) }()
	ro := &fleetv1alpha1.FleetRollout{}
	if err := r.client.Get(ctx, req.NamespacedName, ro); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ro.DeletionTimestamp.IsZero() {
		if err := r.finalizeDeleted(ctx, ro); err != nil {
			return ctrl.Result{}, err
		}
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	r.remember(req.NamespacedName, ro.UID)
	r.recordApprovals(ctx, ro)
	if err := r.syncFinalizer(ctx, ro); err != nil {
		return ctrl.Result{}, err
	}
	if wait := r.paceWait(ro); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	s := &scope{ro: ro, status: ro.Status.DeepCopy()}
	defer func() {
		written, err := r.writeStatus(ctx, s)
		if err != nil {
			retErr = errors.Join(retErr, err)
			return
		}
		if !written {
			// A progress-only change was held back to coalesce writes; the
			// targets' events bring the next reconcile sooner.
			res.RequeueAfter = minPositive(res.RequeueAfter, s.writeRetry)
			return
		}
		retErr = errors.Join(retErr, r.afterWrite(ctx, s))
		res.RequeueAfter = minPositive(res.RequeueAfter, s.describeAgain)
		r.metrics.observe(s.ro)
	}()

	// The cache's own FleetStage, not a copy (a rollout reconciles many
	// times a second, and a fleet of inline targets is megabytes): nothing
	// below modifies it.
	s.fs = &fleetv1alpha1.FleetStage{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: ro.Namespace, Name: ro.Spec.FleetStage}, s.fs, client.UnsafeDisableDeepCopy); err != nil {
		s.fs = nil
		if apierrors.IsNotFound(err) && !ro.Status.Phase.IsFinal() {
			r.setFinal(s, fleetv1alpha1.RolloutFailed, fmt.Sprintf("FleetStage %q does not exist", ro.Spec.FleetStage))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ro.Status.Phase.IsFinal() {
		// A final rollout may still owe its follow-ups if the controller died
		// right after recording the final phase: they are idempotent and
		// write nothing once done.
		if !settling(ro) {
			return ctrl.Result{}, r.settle(ctx, s)
		}
		// Its target Promotions still in flight finish (an abort does not
		// stop a step inside its request): its counts follow them.
		res, err := r.run(ctx, s)
		return res, errors.Join(err, r.settle(ctx, s))
	}
	if err := r.waitTurn(ctx, s); err != nil || s.waiting || s.status.Phase.IsFinal() {
		return ctrl.Result{}, err
	}
	return r.run(ctx, s)
}

// run observes the rollout, decides and applies the decision.
func (r *FleetRolloutReconciler) run(ctx context.Context, s *scope) (ctrl.Result, error) {
	ro, fs := s.ro, s.fs
	// Taken before the observation: a failure the batch below would have
	// to stop for is either observed or counted after this.
	failures := r.failures.count(client.ObjectKeyFromObject(ro))
	r.noteDecided(ro.UID, decided{at: r.clock.Now(), failures: failures, generation: ro.Generation})
	obs, wait, err := r.prepare(ctx, s)
	if obs == nil || err != nil {
		return wait, err
	}
	obs.MaxStarts = maxStartsPerReconcile
	obs.BatchHeldSince = r.batchHeldSince(ro.UID)
	d := rollout.Decide(obs.Observation)
	r.noteBatchHeld(ro.UID, d.HeldBatch)
	s.obs, s.decision = obs, &d
	ctrl.LoggerFrom(ctx).V(2).Info("Decided", "FleetRollout", klog.KObj(ro), "phase", d.Phase, "start", len(d.Start), "abort", len(d.Abort))

	var errs []error
	retry := time.Duration(0)
	if err := r.abort(ctx, ro, d.Abort); err != nil {
		errs = append(errs, err)
	}
	if d.MoreToStart {
		retry = time.Millisecond // come back at once for the rest
	}
	b, heldBack, err := r.claim(ctx, s, batch{starts: d.Start, wave: d.PromoteWave, recovery: d.RecoverWave})
	switch {
	case err != nil:
		errs = append(errs, err)
	case heldBack > 0:
		retry = heldBack
	}
	claimed := !b.empty()
	if n, skipped, err := r.startTargets(ctx, ro, fs, b.starts, failures); err != nil {
		errs = append(errs, err)
	} else {
		if n > 0 {
			retry = max(retry, 250*time.Millisecond)
		}
		if skipped > 0 {
			retry = time.Millisecond // decide again, with the failure seen
		}
	}
	if again, err := r.promoteWaves(ctx, ro, fs, b); err != nil {
		errs = append(errs, err)
	} else if again {
		retry = minPositive(retry, 250*time.Millisecond)
	}
	if claimed && len(errs) == 0 {
		r.landed.note(ro.UID, s.status.Dispatch)
	}
	r.setDecided(s)
	if d.Breach != nil {
		if err := r.ensureRollback(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return ctrl.Result{}, errors.Join(errs...)
	}
	res := ctrl.Result{}
	if !d.RequeueAt.IsZero() {
		res.RequeueAfter = max(d.RequeueAt.Sub(r.clock.Now()), 100*time.Millisecond)
	}
	res.RequeueAfter = minPositive(res.RequeueAfter, retry)
	res.RequeueAfter = minPositive(res.RequeueAfter, verifyAgain(obs))
	return res, nil
}

// prepare observes the rollout for a decision: its plan snapshot, what
// Kargo shows, the Kargo UI gestures on it, its waves' analyses. A nil
// observation means there is nothing to decide now; res says when to come
// back.
func (r *FleetRolloutReconciler) prepare(ctx context.Context, s *scope) (*rollout.Observed, ctrl.Result, error) {
	ro, fs := s.ro, s.fs
	snap, err := r.ensureSnapshot(ctx, ro, fs)
	if err != nil {
		res, err := r.snapshotFailed(s, err)
		return nil, res, err
	}
	obs, err := r.observe(ctx, ro, fs, snap)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if wrote, err := r.applyGestures(ctx, s, obs); err != nil || wrote {
		// The intent changed: decide again on the rollout as written.
		return nil, ctrl.Result{RequeueAfter: time.Millisecond}, err
	}
	if err := r.analyse(ctx, ro, fs, obs); err != nil {
		return nil, ctrl.Result{}, err
	}
	return obs, ctrl.Result{}, nil
}

// promoteWaves creates the batch's wave Stage Promotions: the next wave's,
// and the one recovering a wave whose Promotion errored. It reports
// whether Kargo refused the next wave's because the Freight is not
// available there yet (look again shortly).
func (r *FleetRolloutReconciler) promoteWaves(ctx context.Context, ro *fleetv1alpha1.FleetRollout, fs *fleetv1alpha1.FleetStage,
	b batch) (bool, error) {
	var errs []error
	again := false
	if b.wave != "" {
		unavailable, err := r.promoteWave(ctx, ro, fs, b.wave)
		errs = append(errs, err)
		again = unavailable
	}
	if b.recovery != nil {
		errs = append(errs, r.recoverWave(ctx, ro, fs, *b.recovery))
	}
	return again, errors.Join(errs...)
}

// snapshotFailed answers an error taking or reading the rollout's plan
// snapshot: a rollback's plan waits for the batch the rolled-back rollout
// claimed last; a plan someone else wrote, or a rollback PlanRollback
// refuses, ends the rollout; any other error is retried.
func (r *FleetRolloutReconciler) snapshotFailed(s *scope, err error) (ctrl.Result, error) {
	var foreign *foreignSnapshotError
	var refused *rollout.RollbackRefusal
	switch {
	case errors.Is(err, errClaimLanding):
		return ctrl.Result{RequeueAfter: claimRetry}, nil
	case errors.As(err, &foreign):
		r.setFinal(s, fleetv1alpha1.RolloutFailed, foreign.Error())
		return ctrl.Result{}, nil
	case errors.As(err, &refused):
		r.setFinal(s, fleetv1alpha1.RolloutFailed, "rollback refused: "+refused.Error())
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// waitTurn applies the newer-Freight policy. Forward rollouts of one
// FleetStage run one at a time, oldest first. With policy Queue a newer one
// waits; with Supersede an older one marks itself Superseded as soon as it
// sees a newer one (no new target starts for it; its in-flight Promotions
// finish) and the newest runs. A rollback never waits: it is how the fleet
// gets out of trouble.
func (r *FleetRolloutReconciler) waitTurn(ctx context.Context, s *scope) error {
	ro, fs := s.ro, s.fs
	if ro.Spec.Direction == fleetv1alpha1.DirectionRollback {
		return nil
	}
	open, err := rolloutstore.FindOpen(ctx, r.client, ro.Namespace, fs.Name)
	if err != nil {
		return err
	}
	var older, newer []*fleetv1alpha1.FleetRollout
	for _, o := range open {
		if o.UID == ro.UID || o.Spec.Direction != fleetv1alpha1.DirectionForward {
			continue
		}
		if fleetrollout.Compare(o, ro) < 0 {
			older = append(older, o)
		} else {
			newer = append(newer, o)
		}
	}
	if fs.Spec.Policy.NewerFreight == fleetv1alpha1.SupersedeReplace {
		if len(newer) > 0 {
			by := newer[len(newer)-1]
			r.setFinal(s, fleetv1alpha1.RolloutSuperseded, fmt.Sprintf(
				"superseded by FleetRollout %s (Freight %s): no new target starts for Freight %s; in-flight Promotions finish",
				by.Name, by.Spec.Freight.Name, ro.Spec.Freight.Name))
		}
		return nil
	}
	if len(older) == 0 {
		return nil
	}
	s.waiting = true
	s.status.Phase = fleetv1alpha1.RolloutPending
	s.status.Message = fmt.Sprintf("queued behind FleetRollout %s (Freight %s): newer Freight waits for the running rollout (spec.policy.newerFreight: Queue)",
		older[0].Name, older[0].Spec.Freight.Name)
	return nil
}

// settle completes what follows a final phase: for a breached rollout, the
// rollback its policy asks for (ensureRollback); for a succeeded rollback,
// the wave Stages showing the Freight their targets run again.
func (r *FleetRolloutReconciler) settle(ctx context.Context, s *scope) error {
	switch {
	case s.ro.Spec.Direction == fleetv1alpha1.DirectionRollback && s.ro.Status.Phase == fleetv1alpha1.RolloutSucceeded:
		return r.recordRollbackOnWaveStages(ctx, s.ro, s.fs)
	case fleetrollout.IsBreached(s.ro):
		return r.ensureRollback(ctx, s)
	}
	return nil
}

// settling says a rollout in a final phase still has targets in flight, as
// its status last counted them.
func settling(ro *fleetv1alpha1.FleetRollout) bool {
	if !ro.Status.Phase.IsFinal() {
		return false
	}
	for _, w := range ro.Status.Waves {
		if w.InFlight > 0 {
			return true
		}
	}
	return false
}

// setFinal ends the rollout with a phase and a message, cut to the CRD's
// bound: it may quote object names and errors.
func (r *FleetRolloutReconciler) setFinal(s *scope, phase fleetv1alpha1.RolloutPhase, msg string) {
	now := r.now()
	s.status.Phase, s.status.Message = phase, strutil.Ellipsis(msg, 1024)
	if s.status.FinishedAt == nil {
		s.status.FinishedAt = &now
	}
}

// remember records the UID of a rollout's name, forget drops the in-memory
// state of a rollout that is gone or going: its plan snapshot, expected
// Promotions, write times and metric series.
func (r *FleetRolloutReconciler) remember(key types.NamespacedName, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uids[key] = uid
}

func (r *FleetRolloutReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	uid, ok := r.uids[key]
	delete(r.uids, key)
	delete(r.lastWrite, uid)
	delete(r.batchHeld, uid)
	delete(r.lastDecided, uid)
	r.mu.Unlock()
	r.metrics.forget(key.Namespace, key.Name)
	r.failures.forget(key)
	if ok {
		r.approvals.forget(uid)
		r.snapshots.forget(uid)
		r.expected.clear(uid)
		r.refused.clear(uid)
		r.taken.clear(uid)
		r.landed.forget(uid)
	}
}

// batchHeldSince returns since when the rollout's decisions hold back a
// small batch; zero when they do not.
func (r *FleetRolloutReconciler) batchHeldSince(uid types.UID) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.batchHeld[uid]
}

// noteBatchHeld records whether the rollout's latest decision held back a
// small batch: the first hold starts the wait, a decision that does not
// hold ends it.
func (r *FleetRolloutReconciler) noteBatchHeld(uid types.UID, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case held && r.batchHeld[uid].IsZero():
		r.batchHeld[uid] = r.clock.Now()
	case !held:
		delete(r.batchHeld, uid)
	}
}

func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
