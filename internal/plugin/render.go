package plugin

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Render draws s as it was at now, each line at most Width columns: a
// line that would be longer ends in "…".
func Render(s *Screen, now time.Time) string {
	var b strings.Builder
	line := func(format string, args ...any) { b.WriteString(clip(fmt.Sprintf(format, args...)) + "\n") }

	line("%s %s/%s, created %s ago", s.Kind, s.Namespace, s.Name, age(now, s.Created))
	switch {
	case s.Paused:
		line("PAUSED: the operator takes no action on it (kubectl app-operator resume)")
	case s.ObservedGeneration != s.Generation:
		line("generation %d, the status is of generation %d: the operator has not looked at the last change yet", s.Generation, s.ObservedGeneration)
	}
	for _, f := range s.Summary {
		line("  %-12s %s", f.Label+":", f.Value)
	}

	section(&b, "Conditions")
	if len(s.Conditions) == 0 {
		line("  none yet")
	} else {
		rows := make([][]string, 0, len(s.Conditions))
		for _, c := range s.Conditions {
			rows = append(rows, []string{c.Type, string(c.Status), c.Reason, age(now, c.LastTransitionTime.Time), c.Message})
		}
		table(&b, Table{Header: []string{"TYPE", "STATUS", reasonColumn, "SINCE", "MESSAGE"}, Rows: rows})
	}

	if s.Members != nil {
		section(&b, "Members")
		if len(s.Members.Rows) == 0 {
			line("  none yet")
		} else {
			table(&b, *s.Members)
		}
	}

	if len(s.Changes) > 0 {
		section(&b, "Primary changes")
		rows := make([][]string, 0, len(s.Changes))
		for _, c := range s.Changes {
			rows = append(rows, []string{age(now, c.Time), c.From, c.To, c.Reason})
		}
		table(&b, Table{Header: []string{"AGO", "FROM", "TO", reasonColumn}, Rows: rows})
	}

	if len(s.Certificates) > 0 {
		section(&b, "Certificates")
		rows := make([][]string, 0, len(s.Certificates))
		for _, c := range s.Certificates {
			switch {
			case c.Problem != "":
				rows = append(rows, []string{c.Secret, "-", c.Problem})
			case now.After(c.NotAfter):
				rows = append(rows, []string{c.Secret, "EXPIRED " + age(now, c.NotAfter) + " ago", c.Subject})
			default:
				rows = append(rows, []string{c.Secret, "in " + age(c.NotAfter, now), c.Subject})
			}
		}
		table(&b, Table{Header: []string{"SECRET", "EXPIRES", "SUBJECT"}, Rows: rows})
	}

	if len(s.Backups) > 0 {
		section(&b, "Backups")
		for _, f := range s.Backups {
			line("  %-12s %s", f.Label+":", f.Value)
		}
	}

	section(&b, "Events")
	if len(s.Events) == 0 {
		line("  none kept (the API server keeps events for an hour by default)")
	} else {
		rows := make([][]string, 0, len(s.Events))
		for _, e := range s.Events {
			reason := e.Reason
			if e.Count > 1 {
				reason = fmt.Sprintf("%s (x%d)", e.Reason, e.Count)
			}
			rows = append(rows, []string{age(now, e.Last), e.Type, reason, e.Message})
		}
		table(&b, Table{Header: []string{"AGO", "TYPE", reasonColumn, "MESSAGE"}, Rows: rows})
	}
	return b.String()
}

// reasonColumn heads the column of a reason (a condition's, a change's,
// an event's).
const reasonColumn = "REASON"

// section starts a section called title.
func section(b *strings.Builder, title string) {
	b.WriteString("\n" + title + "\n")
}

// table draws t with its columns as wide as their widest cell, the last
// column clipped at Width.
func table(b *strings.Builder, t Table) {
	widths := make([]int, len(t.Header))
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		for i, cell := range row[:len(row)-1] {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range append([][]string{t.Header}, t.Rows...) {
		var l strings.Builder
		l.WriteString("  ")
		for i, cell := range row {
			if i == len(row)-1 {
				l.WriteString(oneLine(cell))
				break
			}
			l.WriteString(cell + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell)+2))
		}
		b.WriteString(clip(strings.TrimRight(l.String(), " ")) + "\n")
	}
}

// clip cuts s to Width columns, ending it in "…" when it was longer.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= Width {
		return s
	}
	r := []rune(s)
	return string(r[:Width-1]) + "…"
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// age is how long from since to now, as kubectl says it ("5m", "3d2h").
func age(now, since time.Time) string {
	if since.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(since))
}
