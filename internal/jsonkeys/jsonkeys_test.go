package jsonkeys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		doc     string
		known   []string
		wantErr string
	}{
		{name: "distinct keys", doc: `{"project":"shop","config":{"mode":"start","links":[{"url":"u"}]}}`,
			known: []string{"project", "config"}},
		{name: "not an object", doc: `[1,"a",null]`},
		{name: "duplicate key", doc: `{"a":1,"a":2}`, wantErr: `key "a" appears twice`},
		{name: "keys equal but for case", doc: `{"freight":"a","Freight":"b"}`,
			wantErr: `keys "freight" and "Freight" differ only in case`},
		{name: "keys equal under Unicode case folding", doc: `{"k":1,"\u212a":2}`, wantErr: "differ only in case"},
		{name: "nested duplicate names its path", doc: `{"config":{"links":[{"url":"a","URL":"b"}]}}`,
			wantErr: `config.links[0]: keys "url" and "URL" differ only in case`},
		{name: "known key in another case", doc: `{"Project":"shop"}`, known: []string{"project"},
			wantErr: `key "Project" must be spelled "project"`},
		{name: "known names apply at the top only", doc: `{"config":{"Project":1}}`, known: []string{"project"}},
		{name: "nested deeper than the bound", doc: strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2),
			wantErr: "nested deeper than"},
		{name: "nested up to the bound", doc: strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Check([]byte(tt.doc), tt.known...)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}
