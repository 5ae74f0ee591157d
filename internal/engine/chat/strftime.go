package chat

import (
	"fmt"
	"strings"
	"time"
)

// strftime formats t like Python's datetime.strftime on a naive datetime
// (transformers calls datetime.now().strftime), so %z and %Z are empty.
// glibc's "-" flag (%-d) drops the padding. Unknown directives are copied
// through, as glibc does.
func strftime(format string, t time.Time) string {
	var sb strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			sb.WriteByte(c)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) {
			pad = false
			i++
		}
		num := func(n, width int) {
			if pad {
				fmt.Fprintf(&sb, "%0*d", width, n)
			} else {
				fmt.Fprintf(&sb, "%d", n)
			}
		}
		switch format[i] {
		case 'a':
			sb.WriteString(t.Weekday().String()[:3])
		case 'A':
			sb.WriteString(t.Weekday().String())
		case 'b', 'h':
			sb.WriteString(t.Month().String()[:3])
		case 'B':
			sb.WriteString(t.Month().String())
		case 'c':
			sb.WriteString(t.Format("Mon Jan _2 15:04:05 2006"))
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&sb, "%2d", t.Day())
		case 'f':
			fmt.Fprintf(&sb, "%06d", t.Nanosecond()/1000)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			num((t.Hour()+11)%12+1, 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'm':
			num(int(t.Month()), 2)
		case 'M':
			num(t.Minute(), 2)
		case 'p':
			if t.Hour() < 12 {
				sb.WriteString("AM")
			} else {
				sb.WriteString("PM")
			}
		case 'S':
			num(t.Second(), 2)
		case 'u':
			sb.WriteString(fmt.Sprint((int(t.Weekday())+6)%7 + 1))
		case 'w':
			sb.WriteString(fmt.Sprint(int(t.Weekday())))
		case 'x':
			sb.WriteString(t.Format("01/02/06"))
		case 'X':
			sb.WriteString(t.Format("15:04:05"))
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			sb.WriteString(fmt.Sprint(t.Year()))
		case 'z', 'Z':
		case '%':
			sb.WriteByte('%')
		default:
			sb.WriteByte('%')
			if !pad {
				sb.WriteByte('-')
			}
			sb.WriteByte(format[i])
		}
	}
	return sb.String()
}
