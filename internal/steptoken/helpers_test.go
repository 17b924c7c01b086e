package steptoken

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	fleetv1alpha1 "github.com/kargo-fleet/kargo-fleet/api/v1alpha1"
	"github.com/kargo-fleet/kargo-fleet/internal/envtest"
	"github.com/kargo-fleet/kargo-fleet/internal/testutil"
)

const testProject = "shop"

var testKey = StaticKey("0123456789abcdef0123456789abcdef")

// testNamespace returns a Project namespace with the given annotations,
// labelled as a fleet Project by the controller.
func testNamespace(name string, annotations map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations,
		Labels: map[string]string{fleetv1alpha1.PromotionGuardLabel: fleetv1alpha1.PromotionGuardEnforce}}}
}

// testFleetStage returns a FleetStage of the test Project: the minter only
// asks whether a Project has one.
func testFleetStage() *fleetv1alpha1.FleetStage {
	return testutil.MakeFleetStage(testProject, "prod").Obj()
}

// newFakeClient returns a fake client holding objs.
func newFakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(envtest.NewScheme()).WithObjects(objs...).Build()
}
