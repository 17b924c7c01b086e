package argocd

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAppProjectPermits(t *testing.T) {
	t.Parallel()
	app := func(server, name, ns, repo string) *Application {
		return &Application{Spec: ApplicationSpec{Destination: Destination{Server: server, Name: name, Namespace: ns},
			Source: &Source{RepoURL: repo}}}
	}
	proj := &AppProject{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}, Spec: AppProjectSpec{
		SourceRepos: []string{"git://127.0.0.1/*", "!git://127.0.0.1/secret"},
		Destinations: []Destination{
			{Server: "https://d*.clusters.local", Namespace: "guestbook-*"},
			{Name: "eu-*", Namespace: "*"},
			{Server: "!https://d9.clusters.local", Namespace: "*"},
		},
	}}
	tests := []struct {
		name string
		app  *Application
		want string
	}{
		{name: "server and namespace match", app: app("https://d1.clusters.local", "", "guestbook-a", "git://127.0.0.1/app")},
		{name: "cluster by name", app: app("", "eu-west-1", "anything", "git://127.0.0.1/app")},
		{name: "namespace outside", app: app("https://d1.clusters.local", "", "kube-system", "git://127.0.0.1/app"),
			want: `does not permit destination https://d1.clusters.local, namespace "kube-system"`},
		{name: "a denied server", app: app("https://d9.clusters.local", "", "guestbook-a", "git://127.0.0.1/app"),
			want: "does not permit destination https://d9.clusters.local"},
		{name: "an unknown repository", app: app("https://d1.clusters.local", "", "guestbook-a", "https://github.com/x/y"),
			want: "does not permit source repository https://github.com/x/y"},
		{name: "a denied repository", app: app("https://d1.clusters.local", "", "guestbook-a", "git://127.0.0.1/secret"),
			want: "does not permit source repository git://127.0.0.1/secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := proj.Permits(tt.app)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
	require.Equal(t, DefaultProject, (&Application{}).ProjectName())
}

func TestGlob(t *testing.T) {
	t.Parallel()
	require.True(t, Glob("*", ""))
	require.True(t, Glob("a*c", "abbbc"))
	require.True(t, Glob("a?c", "abc"))
	require.False(t, Glob("a?c", "abbc"))
	require.True(t, Glob("https://x.io/[a]", "https://x.io/[a]"), "regexp characters are literal")
	require.False(t, Glob("guestbook", "guestbook-a"))
}

func TestComparisonProblem(t *testing.T) {
	t.Parallel()
	app := &Application{Status: ApplicationStatus{Conditions: []Condition{{Type: "SyncError", Message: "x"}}}}
	require.Equal(t, "SyncError: x", app.ComparisonProblem())
	app.Status.Conditions = []Condition{{Type: "OrphanedResourceWarning"}}
	require.Empty(t, app.ComparisonProblem())
}
