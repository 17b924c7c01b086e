package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// Output formats every verb reads alike (see docs/cli.md). Without -o a verb
// prints for people; wide adds columns where the verb prints a table; json,
// yaml, kyaml, jsonpath, go-template and their -file forms go through
// kubectl's printers; name prints resource/name of the Kubernetes objects the
// verb shows or changes.
const (
	outputWide = "wide"
	outputName = "name"
	outputJSON = "json"
	outputYAML = "yaml"
)

// legacyTextFormats are -o values that earlier releases took for the text
// output; they still select it.
var legacyTextFormats = []string{"text", "table"}

// outputOptions are -o and kubectl's template flags, bound through
// genericclioptions.PrintFlags so they mean what they mean to kubectl.
type outputOptions struct {
	flags *genericclioptions.PrintFlags
	// wide says whether the verb has a wide text form.
	wide bool
}

// newOutputOptions returns the output options of a verb: wide says whether it
// has a wide text form, names whether -o name prints its objects.
func newOutputOptions(wide, names bool) *outputOptions {
	f := genericclioptions.NewPrintFlags("")
	if !names {
		f.NamePrintFlags = nil
	}
	return &outputOptions{flags: f, wide: wide}
}

func (o *outputOptions) addFlags(cmd *cobra.Command) {
	o.flags.AddFlags(cmd)
	groupFlags(cmd.Flags(), outputFlags, "output", "template", "allow-missing-template-keys", "show-managed-fields")
	formats := o.formats()
	cmd.Flags().Lookup("output").Usage = "Output format: text for people when not given, else one of " +
		strings.Join(formats, ", ") + "."
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return formats, cobra.ShellCompDirectiveNoFileComp
	})
}

// format is the -o value in lower case.
func (o *outputOptions) format() string {
	return strings.ToLower(*o.flags.OutputFormat)
}

// text reports whether the output is for people (no -o, or wide).
func (o *outputOptions) text() bool {
	f := o.format()
	return f == "" || f == outputWide || slices.Contains(legacyTextFormats, f)
}

// isWide reports whether -o wide was asked for.
func (o *outputOptions) isWide() bool { return o.format() == outputWide }

// names reports whether -o name was asked for.
func (o *outputOptions) names() bool { return o.format() == outputName }

// validate rejects a format the verb has no printer for, and a template that
// does not parse, before the verb reads the cluster.
func (o *outputOptions) validate() error {
	if o.format() == outputWide && !o.wide {
		return fmt.Errorf("--output wide: this command has no wide form; use one of %s", strings.Join(o.formats(), ", "))
	}
	if o.text() {
		return nil
	}
	_, err := o.flags.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return fmt.Errorf("--output %q: use one of %s", *o.flags.OutputFormat, strings.Join(o.formats(), ", "))
	}
	if err != nil {
		return fmt.Errorf("--output %q: %w", *o.flags.OutputFormat, err)
	}
	return nil
}

// formats lists the -o values the verb takes besides its default text.
func (o *outputOptions) formats() []string {
	formats := o.flags.AllowedFormats()
	if o.wide {
		formats = append([]string{outputWide}, formats...)
	}
	return formats
}

// printValue prints a value that is not a Kubernetes object (a report, a
// plan) with the printer -o names: its JSON is what json prints, yaml turns
// into YAML and templates read.
func (o *outputOptions) printValue(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding the output: %w", err)
	}
	p, err := o.flags.ToPrinter()
	if err != nil {
		return err
	}
	return p.PrintObj(&apiruntime.Unknown{Raw: raw, ContentType: apiruntime.ContentTypeJSON}, w)
}

// printObjects prints Kubernetes objects with the printer -o names: json of
// more or less than one object is a v1 List, as kubectl prints it.
func (o *outputOptions) printObjects(w io.Writer, objs ...apiruntime.Object) error {
	p, err := o.flags.ToPrinter()
	if err != nil {
		return err
	}
	scheme := cliScheme()
	for _, obj := range objs {
		if err := setKind(scheme, obj); err != nil {
			return err
		}
	}
	if o.format() == outputJSON && len(objs) != 1 {
		list := &metav1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"},
			Items: make([]apiruntime.RawExtension, len(objs))}
		for i, obj := range objs {
			list.Items[i] = apiruntime.RawExtension{Object: obj}
		}
		return p.PrintObj(list, w)
	}
	return printEach(p, w, objs)
}

func printEach(p printers.ResourcePrinter, w io.Writer, objs []apiruntime.Object) error {
	for _, obj := range objs {
		if err := p.PrintObj(obj, w); err != nil {
			return err
		}
	}
	return nil
}

// setKind sets an object's apiVersion and kind from the CLI's scheme: the
// client leaves them empty on typed objects, and printers need them.
func setKind(scheme *apiruntime.Scheme, obj apiruntime.Object) error {
	if !obj.GetObjectKind().GroupVersionKind().Empty() {
		return nil
	}
	gvks, _, err := scheme.ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("error finding the kind of %T: %w", obj, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	return nil
}
