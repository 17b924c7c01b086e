package kargosim

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// LoggerName names the simulator's logger: every line it logs says it
// comes from the Kargo simulator, not from Kargo.
const LoggerName = "kargo-simulator"

// Simulator plays Kargo's controller and Promotion and Stage webhooks
// against one apiserver. Create it with New and add it to a manager with
// SetupWithManager; the manager's identity is the simulated Kargo
// controller's (it needs to read and write Kargo objects, read Secrets and
// ConfigMaps, create SubjectAccessReviews, and write Leases in Kargo's
// namespace, which it creates when absent).
type Simulator struct {
	opts   Options
	client client.Client
	// reader reads straight from the apiserver where a stale cache would
	// change a decision, and where the Promotion webhook's cache does not
	// hold an object yet (admissionStage). The controllers
	// read through client's cache: every write they base on a cached read is
	// either guarded by the object's resourceVersion or idempotent, and the
	// watch event that makes the cache current reconciles again.
	reader client.Reader
	// freightStatus writes the Stage controller's Freight status entries.
	freightStatus *freightStatusWriter
	ulids         *ulidSource
	engine        *engine
	// recorded remembers when the Stage controller recorded each succeeded
	// Promotion (namespace/name), to the sub-second: verifiedIn is written
	// VerifiedInDelay after that, and API timestamps have whole seconds.
	recorded sync.Map
	// polls holds each Running Promotion's nextPoll (namespace/name).
	polls sync.Map
	// shards holds each simulated controller's state, by shard.
	shards map[string]*shardController
	// metricsAddress is where the service metrics are served ("": not).
	metricsAddress string
	// serviceCollector serves the service metrics (nil: not served).
	serviceCollector *serviceCollector
}

// New returns a simulator that uses the manager's client.
func New(mgr ctrl.Manager, opts Options) *Simulator {
	opts = opts.withDefaults()
	s := &Simulator{
		opts:   opts,
		client: mgr.GetClient(),
		reader: mgr.GetAPIReader(),
		ulids:  newULIDSource(),
	}
	s.shards = newShardControllers(s.controllerShards())
	s.freightStatus = newFreightStatusWriter(mgr.GetClient(), freightStatusFlushInterval)
	s.engine = newEngine(opts, s)
	return s
}

// newEngine registers the step kinds: http and compose-output run for real,
// argocd-update checks the Applications it names for authorization, every
// other kind is simulated.
func newEngine(opts Options, apps applicationReader) *engine {
	e := &engine{kinds: map[string]stepKind{
		"http":           {runner: &httpStep{transport: opts.HTTPTransport}},
		"compose-output": {runner: composeOutputStep{}, propagatesToTask: true},
	}}
	sim := simulatedStep{seed: opts.Seed}
	for _, k := range simulatedKinds {
		e.kinds[k.name] = stepKind{runner: sim, defaultTimeout: k.timeout}
	}
	argo := e.kinds["argocd-update"]
	argo.runner = argoCDUpdateStep{simulated: sim, apps: apps}
	e.kinds["argocd-update"] = argo
	return e
}

// SetupWithManager registers the Promotion and Stage webhooks on the
// manager's webhook server, the Promotion and Stage controllers, their
// heartbeats and, with Options.ServiceMetrics, the service metrics server.
func (s *Simulator) SetupWithManager(mgr ctrl.Manager) error {
	decoder := admission.NewDecoder(mgr.GetScheme())
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePromotionPath, &webhook.Admission{Handler: &mutatingHandler{sim: s, decoder: decoder}})
	srv.Register(ValidatePromotionPath, &webhook.Admission{Handler: &validatingHandler{sim: s, decoder: decoder}})
	srv.Register(ValidateStagePath, &webhook.Admission{Handler: &stageValidatingHandler{decoder: decoder}})
	srv.Register(ValidateProjectPath, &webhook.Admission{Handler: &projectValidatingHandler{sim: s, decoder: decoder}})
	if err := mgr.Add(s.freightStatus); err != nil {
		return fmt.Errorf("error adding the simulated Freight status writer: %w", err)
	}
	if err := indexPromotionsByStage(mgr); err != nil {
		return err
	}
	if err := s.setupPromotionController(mgr); err != nil {
		return fmt.Errorf("error setting up the simulated Promotion controller: %w", err)
	}
	if err := s.setupStageController(mgr); err != nil {
		return fmt.Errorf("error setting up the simulated Stage controller: %w", err)
	}
	if err := s.setupHeartbeats(mgr); err != nil {
		return fmt.Errorf("error setting up the simulated controllers' heartbeats: %w", err)
	}
	if s.opts.ServiceMetrics != nil {
		return s.setupServiceMetrics(mgr)
	}
	return nil
}

// logger returns the simulator's named logger from the context.
func logger(ctx context.Context) logr.Logger {
	return logr.FromContextOrDiscard(ctx).WithName(LoggerName)
}

// admissionStage reads the Stage a Promotion names, for the Promotion
// webhook. Kargo's webhook reads it through its manager's cache; so does
// the simulator, so that a Promotion costs the apiserver what it costs with
// Kargo. A Stage the cache does not hold yet is read from the apiserver
// (Kargo would refuse the Promotion until its cache caught up): a caller
// that promotes a Stage it has just created is not refused by a race.
// Nil when the Stage does not exist.
func (s *Simulator) admissionStage(ctx context.Context, namespace, name string) (*kargo.Stage, error) {
	st, err := s.cachedStage(ctx, namespace, name)
	if st != nil || err != nil {
		return st, err
	}
	return getOrNil[kargo.Stage](ctx, s.reader, "Stage", namespace, name)
}

// cachedStage reads a Stage from the cache; nil when it does not exist.
func (s *Simulator) cachedStage(ctx context.Context, namespace, name string) (*kargo.Stage, error) {
	return getOrNil[kargo.Stage](ctx, s.client, "Stage", namespace, name)
}

// cacheFirst reads an object the Promotion webhook needs as admissionStage
// reads the Stage: from the cache, and from the apiserver when the cache
// does not hold it (yet).
func (s *Simulator) cacheFirst(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	err := s.client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return s.reader.Get(ctx, key, obj)
	}
	return err
}

// getOrNil reads an object; nil when it does not exist.
func getOrNil[T any, PT interface {
	*T
	client.Object
}](ctx context.Context, r client.Reader, kind, namespace, name string, opts ...client.GetOption) (*T, error) {
	obj := PT(new(T))
	if err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("error getting %s %q in namespace %q: %w", kind, name, namespace, err)
	}
	return obj, nil
}

// projectFreight lists the project's Freight from the cache without
// copying them: a Freight held by thousands of Stages is a large object,
// read on every Stage reconcile. The result is shared with the cache and
// must not be modified.
func (s *Simulator) projectFreight(ctx context.Context, namespace string) ([]kargo.Freight, error) {
	var list kargo.FreightList
	if err := s.client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("error listing Freight in namespace %q: %w", namespace, err)
	}
	return list.Items, nil
}

// cachedFreight reads a Freight from the cache without copying it (read
// only, as projectFreight); nil when it does not exist.
func (s *Simulator) cachedFreight(ctx context.Context, namespace, name string) (*kargo.Freight, error) {
	return getOrNil[kargo.Freight](ctx, s.client, "Freight", namespace, name, client.UnsafeDisableDeepCopy)
}

// freightNamed finds a Freight by name in a list; nil when absent.
func freightNamed(list []kargo.Freight, name string) *kargo.Freight {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// autoPromotionEnabledFor reads the Project's ProjectConfig and judges the
// Stage.
func (s *Simulator) autoPromotionEnabledFor(ctx context.Context, stage *kargo.Stage) (bool, error) {
	var cfg kargo.ProjectConfig
	err := s.client.Get(ctx, types.NamespacedName{Namespace: stage.Namespace, Name: stage.Namespace}, &cfg)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("error getting ProjectConfig for Project %q: %w", stage.Namespace, err)
	}
	return cfg.AutoPromotionEnabled(stage.ObjectMeta)
}

// availableFreightFor lists the project's Freight available to the Stage
// (from the cache, read only).
func (s *Simulator) availableFreightFor(ctx context.Context, stage *kargo.Stage) ([]kargo.Freight, error) {
	list, err := s.projectFreight(ctx, stage.Namespace)
	if err != nil {
		return nil, err
	}
	return availableFreight(stage, list, s.opts.Clock.Now()), nil
}

// getTask fetches a PromotionTask or ClusterPromotionTask for expansion.
func (s *Simulator) getTask(ctx context.Context, namespace string, ref *kargo.PromotionTaskRef) (*kargo.PromotionTaskSpec, error) {
	switch ref.Kind {
	case kargo.PromotionTaskKind, "":
		var t kargo.PromotionTask
		if err := s.cacheFirst(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &t); err != nil {
			return nil, err
		}
		return &t.Spec, nil
	case kargo.ClusterPromotionTaskKind:
		var t kargo.ClusterPromotionTask
		if err := s.cacheFirst(ctx, types.NamespacedName{Name: ref.Name}, &t); err != nil {
			return nil, err
		}
		return &t.Spec, nil
	default:
		return nil, fmt.Errorf("unknown task reference kind %q", ref.Kind)
	}
}

// secretData implements dataReader: a missing Secret reads as empty.
func (s *Simulator) secretData(ctx context.Context, namespace, name string) (map[string]string, error) {
	var sec corev1.Secret
	if err := s.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &sec); err != nil {
		if apierrors.IsNotFound(err) {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("failed to get secret %s: %w", name, err)
	}
	out := make(map[string]string, len(sec.Data)+len(sec.StringData))
	for k, v := range sec.Data {
		out[k] = string(v)
	}
	return out, nil
}

// configMapData implements dataReader: a missing ConfigMap reads as empty.
func (s *Simulator) configMapData(ctx context.Context, namespace, name string) (map[string]string, error) {
	var cm corev1.ConfigMap
	if err := s.reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("failed to get configmap %s: %w", name, err)
	}
	out := make(map[string]string, len(cm.Data))
	for k, v := range cm.Data {
		out[k] = v
	}
	return out, nil
}

func keyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
