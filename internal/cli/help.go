package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/mitchellh/go-wordwrap"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the width help is laid out for: a terminal's usual 80
// columns, so no help line wraps in the middle of a word.
const helpWidth = 80

// connectionFlagAnnotation marks the flags kubectl's ConfigFlags add, which
// help lists apart from the verb's own.
const connectionFlagAnnotation = "kargo-fleet.io/connection-flag"

// annotateConnectionFlags marks every flag of fs as a connection flag.
func annotateConnectionFlags(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[connectionFlagAnnotation] = []string{"true"}
	})
}

// formatHelp wraps every command's long description to helpWidth and makes
// usage list the verb's flags first and kubectl's connection flags after
// them, both wrapped to helpWidth.
func formatHelp(root *cobra.Command) {
	root.SetUsageFunc(writeUsage)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Long = wrapParagraphs(c.Long, helpWidth)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// writeUsage writes a command's usage: use line, examples, sub-commands,
// its own flags, then the connection flags.
func writeUsage(c *cobra.Command) error {
	w := c.OutOrStderr()
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\nAvailable Commands:")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	own, connection := pflag.NewFlagSet("own", pflag.ContinueOnError), pflag.NewFlagSet("connection", pflag.ContinueOnError)
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if _, ok := f.Annotations[connectionFlagAnnotation]; ok {
			connection.AddFlag(f)
			return
		}
		own.AddFlag(f)
	})
	for _, section := range []struct {
		title string
		flags *pflag.FlagSet
	}{{"Flags", own}, {"Connection flags (kubectl's)", connection}, {"Global Flags", c.InheritedFlags()}} {
		if section.flags.HasAvailableFlags() {
			fmt.Fprintf(&b, "\n\n%s:\n%s", section.title, strings.TrimRight(section.flags.FlagUsagesWrapped(helpWidth), " \n"))
		}
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wrapParagraphs wraps each paragraph of s to width columns. Lines that
// start with a space (examples, lists) are kept as they are.
func wrapParagraphs(s string, width int) string {
	if s == "" {
		return s
	}
	paragraphs := strings.Split(s, "\n\n")
	for i, p := range paragraphs {
		if strings.HasPrefix(p, " ") || strings.Contains(p, "\n ") {
			continue
		}
		paragraphs[i] = wordwrap.WrapString(strings.Join(strings.Fields(p), " "), uint(width))
	}
	return strings.Join(paragraphs, "\n\n")
}
