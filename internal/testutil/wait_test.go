package testutil

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kargo-fleet/kargo-fleet/internal/kargo"
)

// fatalTB records the failure Await reports and stops the polling as
// testing.T's FailNow would.
type fatalTB struct {
	testing.TB
	failure string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failure = fmt.Sprintf(format, args...)
	panic(f)
}

func TestAwait(t *testing.T) {
	t.Parallel()
	s := runtime.NewScheme()
	require.NoError(t, kargo.AddToScheme(s))
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(MakeStage("shop", "prod").Current("f1").Obj()).Build()
	go func() {
		time.Sleep(3 * PollInterval)
		st := &kargo.Stage{}
		_ = c.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "prod"}, st)
		st.Status.FreightHistory = MakeStage("", "").Current("f2").Status.FreightHistory
		_ = c.Update(context.Background(), st)
	}()

	got := Await(t, c, Named[kargo.Stage]("shop", "prod"), 10*time.Second, func(st *kargo.Stage) bool {
		return st.CurrentFreightNames()[0] == "f2"
	})
	require.Equal(t, []string{"f2"}, got.CurrentFreightNames(), "it returns the object as last read")

	tb := &fatalTB{TB: t}
	func() {
		defer func() { require.Same(t, tb, recover()) }()
		Await(tb, c, Named[kargo.Stage]("shop", "missing"), 2*PollInterval, func(*kargo.Stage) bool { return true },
			"Stage %s never showed up", "missing")
	}()
	require.Contains(t, tb.failure, `Stage missing never showed up: *kargo.Stage shop/missing not as expected after 100ms`)
	require.Contains(t, tb.failure, `(last error: stages.kargo.akuity.io "missing" not found)`)
}
