package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
	"github.com/kargo-fleet/kargo-fleet/internal/render"
)

// probeNamespace holds the probe Freight, away from the fleet's Project so
// the simulator has no Stage there to react with.
const probeNamespace = "scale-freight-probe"

// freightProbe is whether the API server stores a Freight whose status
// names every target Stage, as Kargo writes it once the Freight is current
// and verified in all of them.
type freightProbe struct {
	targets  int
	bytes    int // serialized size as stored, managedFields included
	status   int // serialized size of the status alone
	managed  int // serialized size of managedFields (0: the API server dropped them)
	accepted bool
	err      string
	took     time.Duration
	// onePatch is the mean latency of a patch adding one Stage's entry to
	// that full status, as Kargo makes for each target Stage it promotes.
	onePatch time.Duration
}

// onePatches is how many single-entry patches the probe times.
const onePatches = 20

// probeFreight writes currentlyIn and verifiedIn entries for n target
// Stages into a fresh Freight's status with a merge patch, as Kargo's
// controller does one Stage at a time, and reads back its size.
func probeFreight(ctx context.Context, c client.Client, n int) (*freightProbe, error) {
	if err := c.Create(ctx, envtest.ProjectNamespace(probeNamespace)); client.IgnoreAlreadyExists(err) != nil {
		return nil, err
	}
	f := &kargo.Freight{
		ObjectMeta: metav1.ObjectMeta{Namespace: probeNamespace, Name: fmt.Sprintf("probe-%d", n)},
		Origin:     kargo.FreightOrigin{Kind: kargo.OriginKindWarehouse, Name: "apps"},
		Images:     []apiextensionsv1.JSON{{Raw: []byte(`{"repoURL":"example.com/guestbook","tag":"v9"}`)}},
	}
	if err := c.Create(ctx, f); err != nil {
		return nil, fmt.Errorf("error creating probe Freight: %w", err)
	}
	now := metav1.Now()
	verified, current := map[string]any{}, map[string]any{}
	for i := range n {
		stage := render.TargetStageName(fleetName, fmt.Sprintf("t-%05d", i))
		verified[stage] = map[string]any{"verifiedAt": now}
		current[stage] = map[string]any{"since": now}
	}
	raw, err := json.Marshal(map[string]any{"status": map[string]any{"verifiedIn": verified, "currentlyIn": current}})
	if err != nil {
		return nil, err
	}
	res := &freightProbe{targets: n}
	start := time.Now()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = c.Status().Patch(pctx, f, client.RawPatch(types.MergePatchType, raw))
	res.took, res.accepted = time.Since(start), err == nil
	if err != nil {
		res.err = err.Error()
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kargo.GroupVersion.WithKind("Freight"))
	if err := c.Get(ctx, client.ObjectKeyFromObject(f), u); err != nil {
		return nil, err
	}
	stored, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	res.bytes, res.status = len(stored), len(raw)
	if mf := u.GetManagedFields(); len(mf) > 0 {
		raw, err := json.Marshal(mf)
		if err != nil {
			return nil, err
		}
		res.managed = len(raw)
	}
	if res.accepted {
		start := time.Now()
		for i := range onePatches {
			entry := fmt.Sprintf(`{"status":{"verifiedIn":{%q:{"verifiedAt":%q}}}}`,
				render.TargetStageName(fleetName, fmt.Sprintf("x-%05d", i)), now.UTC().Format(time.RFC3339))
			if err := c.Status().Patch(ctx, f, client.RawPatch(types.MergePatchType, []byte(entry))); err != nil {
				return nil, fmt.Errorf("error patching the probe Freight: %w", err)
			}
		}
		res.onePatch = time.Since(start) / onePatches
	}
	return res, c.Delete(ctx, f)
}
