package features

// A parser for the regular expressions users give us (use-regex paths,
// canary-by-header-pattern). They are compiled by NGINX's PCRE, not by Go,
// and run on every request, so two things must hold of what we accept:
//
//   - PCRE and Go's RE2 read it the same way, so that what we check here is
//     what NGINX compiles: `nginx -t` can never fail on an accepted pattern.
//     RE2 accepting a pattern is not enough (PCRE refuses "/[[:alpha:]-z]",
//     "/^*" and "/[::]", which RE2 takes), so only a small grammar that
//     means the same thing in both is accepted: literals, ".", simple
//     character classes of single characters and plain ranges, groups "(…)"
//     and "(?:…)", alternation, quantifiers on an atom, "$" at the end of a
//     branch, and (in header patterns) "^" at the start of one and a few
//     escapes.
//   - No pattern can backtrack catastrophically: PCRE backtracks, and a
//     pattern such as "(a+)+$" costs seconds of worker CPU per request.
//     Repetition of anything that itself repeats or chooses ambiguously is
//     refused; so are many unbounded quantifiers, large counts, and many
//     choices in a row (each "?" or {n,m} multiplies the ways a failing
//     match is retried).

import (
	"fmt"
	"strconv"
)

// RegexDialect says where a pattern is used, which decides its alphabet.
type RegexDialect int

const (
	// RegexPath is a location path: written in double quotes in
	// nginx.conf, so no backslash, quote, ";", space or lone brace; it is
	// anchored by the renderer's "^", so "^" is refused inside it.
	RegexPath RegexDialect = iota
	// RegexHeader is a canary-by-header-pattern, run by ngx.re.match from
	// Lua data (never written into nginx.conf): escapes and "^" allowed.
	RegexHeader
)

// Limits of an accepted pattern. They leave room for every pattern in
// ingress-nginx's documentation and bound the cost of the worst request.
const (
	// MaxRegexPathLen and MaxRegexHeaderLen bound a pattern's length.
	MaxRegexPathLen   = 1024
	MaxRegexHeaderLen = 256
	// MaxRegexRepeat is the largest count in {n}, {n,} or {n,m}.
	MaxRegexRepeat = 100
	// MaxRegexUnbounded is how many "*", "+" and {n,} a pattern may hold.
	MaxRegexUnbounded = 6
	// MaxRegexAmbiguous is how many of them may be ambiguous: followed by
	// something that can start with a character they repeat, so that a
	// failing match retries every place where they could stop. k of them
	// cost about n^k steps on an n-byte URI: three ".*" in a row take
	// seconds of worker CPU on an 8 KB URI, even with PCRE's JIT; two take
	// milliseconds.
	MaxRegexAmbiguous = 2
	// MaxRegexChoices bounds the product of the choices a failing match
	// may retry outside unbounded quantifiers: 2 for each "?", m-n+1 for
	// each {n,m}, the branch count of an alternation whose branches can
	// start with the same character.
	MaxRegexChoices = 1024
	// maxRegexExpanded bounds the pattern's size once counted repetitions
	// are expanded, as PCRE compiles them (its compiled size is limited).
	maxRegexExpanded = 4096
)

// ParseSafeRegex checks that p is in the safe grammar of dialect d. The
// error says what is wrong in words and where.
func ParseSafeRegex(p string, d RegexDialect) error {
	limit := MaxRegexPathLen
	if d == RegexHeader {
		limit = MaxRegexHeaderLen
	}
	if len(p) == 0 || len(p) > limit {
		return fmt.Errorf("a pattern must be 1 to %d characters long", limit)
	}
	rp := &regexParser{s: p, d: d}
	info, err := rp.alternation(0)
	if err != nil {
		return err
	}
	if rp.pos < len(p) {
		// Only an unbalanced ")" stops the top-level alternation early.
		return rp.errorf("unbalanced ')'")
	}
	if rp.unbounded > MaxRegexUnbounded {
		return fmt.Errorf("more than %d unbounded quantifiers (*, +, {n,}): such a pattern can take a long time to fail", MaxRegexUnbounded)
	}
	degree := info.ambiguous
	if d == RegexHeader && p[0] != '^' {
		// ngx.re.match tries every start position of an unanchored pattern.
		degree++
	}
	if degree > MaxRegexAmbiguous {
		return fmt.Errorf("more than %d unbounded quantifiers (*, +, {n,}) are followed by something that can start with a character they repeat (as in .*.*): such a pattern can take a long time to fail", MaxRegexAmbiguous)
	}
	// Measured with NGINX's JIT on an 8 KB URI: ".*.*b$" costs tens of
	// milliseconds; the same with two "?" after it, a quarter of a second.
	if degree == MaxRegexAmbiguous && info.choices > 1 || info.choices > MaxRegexChoices {
		return fmt.Errorf("too many optional parts, counted repetitions and overlapping alternatives: such a pattern can take a long time to fail")
	}
	if info.size > maxRegexExpanded {
		return fmt.Errorf("counted repetitions make the pattern too large")
	}
	return nil
}

// charSet is a set of bytes, compared case-insensitively (paths are
// matched with ~*), so it is always closed under ASCII case.
type charSet [4]uint64

func (c *charSet) add(b byte) {
	for _, x := range []byte{b, lower(b), upper(b)} {
		c[x>>6] |= 1 << (x & 63)
	}
}

func (c *charSet) addRange(lo, hi byte) {
	for b := int(lo); b <= int(hi); b++ {
		c.add(byte(b))
	}
}

func (c *charSet) union(o charSet) {
	for i := range c {
		c[i] |= o[i]
	}
}

func (c charSet) overlaps(o charSet) bool {
	for i := range c {
		if c[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

func allChars() charSet { return charSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} }

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func upper(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}

// reInfo summarizes a parsed piece for the backtracking rules.
type reInfo struct {
	first    charSet // the characters a match can start with
	nullable bool    // it can match the empty string
	quant    bool    // it holds a quantifier
	// overlap: it holds an alternation whose branches can start with the
	// same character or match the empty string.
	overlap bool
	// pending are the sets repeated by its unbounded quantifiers that
	// nothing after them in it decides yet: what follows it does.
	pending []charSet
	// ambiguous counts its unbounded quantifiers followed by something that
	// can start with a character they repeat.
	ambiguous int
	anchor    bool // it is "^" or "$", which cannot be repeated
	choices   int  // product of choices, capped above MaxRegexChoices
	size      int  // expanded size
}

type regexParser struct {
	s         string
	pos       int
	d         RegexDialect
	unbounded int
}

func (p *regexParser) errorf(format string, args ...any) error {
	return fmt.Errorf("at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *regexParser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

func (p *regexParser) more() bool { return p.pos < len(p.s) }

func mulChoices(a, b int) int {
	if a > MaxRegexChoices || b > MaxRegexChoices || a*b > MaxRegexChoices {
		return MaxRegexChoices + 1
	}
	return a * b
}

// alternation := sequence ("|" sequence)*
func (p *regexParser) alternation(depth int) (reInfo, error) {
	if depth > 8 {
		return reInfo{}, p.errorf("groups nested more than 8 deep")
	}
	var out reInfo
	out.choices = 1
	var branches []reInfo
	for {
		b, err := p.sequence(depth)
		if err != nil {
			return reInfo{}, err
		}
		branches = append(branches, b)
		if p.peek() != '|' {
			break
		}
		p.pos++
	}
	overlap := 0
	for i, b := range branches {
		out.first.union(b.first)
		out.nullable = out.nullable || b.nullable
		out.quant = out.quant || b.quant
		out.overlap = out.overlap || b.overlap
		out.pending = append(out.pending, b.pending...)
		out.ambiguous += b.ambiguous
		out.size += b.size + 1
		if b.choices > out.choices {
			out.choices = b.choices
		}
		for _, c := range branches[:i] {
			if c.first.overlaps(b.first) || c.nullable || b.nullable {
				out.overlap = true
				overlap++
				break
			}
		}
	}
	if overlap > 0 {
		out.choices = mulChoices(out.choices, overlap+1)
	}
	return out, nil
}

// sequence := piece*, up to "|", ")" or the end.
func (p *regexParser) sequence(depth int) (reInfo, error) {
	out := reInfo{nullable: true, choices: 1}
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		piece, err := p.piece(depth, out.size == 0 && out.nullable)
		if err != nil {
			return reInfo{}, err
		}
		if out.nullable {
			out.first.union(piece.first)
		}
		// An unbounded quantifier is decided by the next character: only
		// when the piece after it cannot start with a character it repeats
		// does a failing match not retry every place where it could stop.
		var still []charSet
		for _, set := range out.pending {
			switch {
			case set.overlaps(piece.first):
				out.ambiguous++
			case piece.nullable:
				still = append(still, set)
			}
		}
		out.pending = append(still, piece.pending...)
		out.ambiguous += piece.ambiguous
		out.nullable = out.nullable && piece.nullable
		out.quant = out.quant || piece.quant
		out.overlap = out.overlap || piece.overlap
		out.choices = mulChoices(out.choices, piece.choices)
		out.size += piece.size
	}
	return out, nil
}

// piece := atom quantifier?
func (p *regexParser) piece(depth int, atStart bool) (reInfo, error) {
	start := p.pos
	atom, err := p.atom(depth, atStart)
	if err != nil {
		return reInfo{}, err
	}
	if !p.more() || !isQuantifierStart(p.s, p.pos) {
		return atom, nil
	}
	if atom.anchor {
		return reInfo{}, p.errorf("an anchor cannot be repeated")
	}
	lo, hi, err := p.quantifier()
	if err != nil {
		return reInfo{}, err
	}
	if p.more() && p.peek() == '?' {
		p.pos++ // lazy: the same in PCRE and RE2
	}
	if p.more() && isQuantifierStart(p.s, p.pos) {
		return reInfo{}, p.errorf("a quantifier cannot follow a quantifier (PCRE reads it as possessive, RE2 refuses it)")
	}
	text := p.s[start:p.pos]
	switch {
	case hi < 0:
		p.unbounded++
		if atom.quant || atom.overlap || atom.nullable {
			return reInfo{}, fmt.Errorf("%q repeats without bound something that itself repeats, is optional or has overlapping alternatives: it can take exponential time to fail", text)
		}
	case hi > 1:
		if atom.quant || atom.overlap {
			return reInfo{}, fmt.Errorf("%q repeats something that itself repeats or has overlapping alternatives: it can take exponential time to fail", text)
		}
	}
	out := atom
	out.quant = true
	out.nullable = atom.nullable || lo == 0
	n := hi
	if hi < 0 {
		n = lo + 1
		out.pending = append(out.pending[:len(out.pending):len(out.pending)], atom.first)
	} else {
		out.choices = mulChoices(atom.choices, hi-lo+1)
	}
	out.size = atom.size * max(n, 1)
	return out, nil
}

func isQuantifierStart(s string, i int) bool {
	switch s[i] {
	case '*', '+', '?':
		return true
	case '{':
		_, _, n := parseCount(s[i:])
		return n > 0
	}
	return false
}

// quantifier reads "*", "+", "?" or {n}, {n,}, {n,m}; hi < 0 is unbounded.
func (p *regexParser) quantifier() (lo, hi int, err error) {
	switch c := p.peek(); c {
	case '*':
		p.pos++
		return 0, -1, nil
	case '+':
		p.pos++
		return 1, -1, nil
	case '?':
		p.pos++
		return 0, 1, nil
	}
	lo, hi, n := parseCount(p.s[p.pos:])
	if lo > MaxRegexRepeat || hi > MaxRegexRepeat {
		return 0, 0, p.errorf("a repetition count is over %d", MaxRegexRepeat)
	}
	if hi >= 0 && hi < lo {
		return 0, 0, p.errorf("{%d,%d}: the maximum is below the minimum", lo, hi)
	}
	p.pos += n
	return lo, hi, nil
}

// parseCount reads {n}, {n,} or {n,m} with at most 4 digits each at the
// start of s: n is its length, 0 when s starts with none of them.
func parseCount(s string) (lo, hi, n int) {
	digits := func(i int) (int, int) {
		j := i
		for j < len(s) && j-i < 5 && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		if j == i || j-i > 4 {
			return -1, i
		}
		v, _ := strconv.Atoi(s[i:j])
		return v, j
	}
	if len(s) < 3 || s[0] != '{' {
		return 0, 0, 0
	}
	lo, i := digits(1)
	if lo < 0 || i >= len(s) {
		return 0, 0, 0
	}
	switch s[i] {
	case '}':
		return lo, lo, i + 1
	case ',':
		if i+1 < len(s) && s[i+1] == '}' {
			return lo, -1, i + 2
		}
		hi, j := digits(i + 1)
		if hi < 0 || j >= len(s) || s[j] != '}' {
			return 0, 0, 0
		}
		return lo, hi, j + 1
	}
	return 0, 0, 0
}

// pathLiterals are the characters a path may hold that are not regex
// syntax in either engine. headerLiterals adds the printable ASCII a
// header pattern may hold besides.
const (
	pathLiterals   = "-_/~:@!,=%&"
	headerLiterals = pathLiterals + " #<>;`"
)

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func (p *regexParser) isLiteral(c byte) bool {
	set := pathLiterals
	if p.d == RegexHeader {
		set = headerLiterals
	}
	return isAlnum(c) || (c != 0 && containsByte(set, c))
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// atom := literal | "." | class | group | escape | anchor
func (p *regexParser) atom(depth int, atStart bool) (reInfo, error) {
	c := p.peek()
	one := func(set charSet) (reInfo, error) {
		p.pos++
		return reInfo{first: set, choices: 1, size: 1}, nil
	}
	switch {
	case p.isLiteral(c):
		var set charSet
		set.add(c)
		return one(set)
	case c == '.':
		return one(allChars())
	case c == '[':
		set, err := p.class()
		return reInfo{first: set, choices: 1, size: 1}, err
	case c == '(':
		return p.group(depth)
	case c == '\\' && p.d == RegexHeader:
		set, err := p.escape(false)
		return reInfo{first: set, choices: 1, size: 1}, err
	case c == '$':
		next := byte(0)
		if p.pos+1 < len(p.s) {
			next = p.s[p.pos+1]
		}
		if next != 0 && next != ')' && next != '|' {
			return reInfo{}, p.errorf("'$' may only end the pattern or a branch (before ')' or '|')")
		}
		p.pos++
		return reInfo{nullable: true, anchor: true, choices: 1}, nil
	case c == '^' && p.d == RegexHeader:
		if !atStart {
			return reInfo{}, p.errorf("'^' may only start the pattern or a branch")
		}
		p.pos++
		return reInfo{nullable: true, anchor: true, choices: 1}, nil
	case c == '{':
		return reInfo{}, p.errorf("'{' is only allowed in {n}, {n,} or {n,m} after something to repeat")
	case c == '*' || c == '+' || c == '?':
		return reInfo{}, p.errorf("%q has nothing to repeat", c)
	}
	return reInfo{}, p.errorf("%s is not allowed here", describeByte(c))
}

func describeByte(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("%q", c)
}

// group := "(" ("?:")? alternation ")"
func (p *regexParser) group(depth int) (reInfo, error) {
	p.pos++
	if p.peek() == '?' {
		if p.pos+1 < len(p.s) && p.s[p.pos+1] == ':' {
			p.pos += 2
		} else {
			return reInfo{}, p.errorf("only (...) and (?:...) groups are allowed (no flags, names or look-arounds)")
		}
	}
	info, err := p.alternation(depth + 1)
	if err != nil {
		return reInfo{}, err
	}
	if p.peek() != ')' {
		return reInfo{}, p.errorf("missing ')'")
	}
	p.pos++
	info.anchor = false
	info.size++
	return info, nil
}

// escape reads a backslash escape of a header pattern: \d \D \w \W \s \S,
// or a backslash before punctuation, which is that character. Letters and
// digits after a backslash mean different things in PCRE and RE2 (\Q, \z,
// \1, \x…), so no other is accepted.
func (p *regexParser) escape(inClass bool) (charSet, error) {
	var set charSet
	if p.pos+1 >= len(p.s) {
		return set, p.errorf("a trailing backslash")
	}
	c := p.s[p.pos+1]
	p.pos += 2
	switch c {
	case 'd':
		set.addRange('0', '9')
	case 'w':
		set.addRange('0', '9')
		set.addRange('a', 'z')
		set.add('_')
	case 's':
		for _, b := range []byte(" \t\n\r\f\v") {
			set.add(b)
		}
	case 'D', 'W', 'S':
		set = allChars()
	default:
		if isAlnum(c) || c < 0x21 || c > 0x7e || c == '"' || c == '\'' {
			p.pos -= 2
			return set, p.errorf("only \\d, \\w, \\s, their negations and escaped punctuation are allowed")
		}
		set.add(c)
	}
	return set, nil
}

// class := "[" "^"? item+ "]", items being single characters and ranges
// between two letters of the same case or two digits. "[" inside a class
// ("[:alpha:]" in PCRE, a literal in RE2), a class starting with ":", "."
// or "=" (PCRE checks for a POSIX class there) and "]" as a member are
// refused; "-" is a member only first or last.
func (p *regexParser) class() (charSet, error) {
	var set charSet
	start := p.pos
	p.pos++
	negated := false
	if p.peek() == '^' {
		negated = true
		p.pos++
	}
	if c := p.peek(); c == ':' || c == '.' || c == '=' {
		return set, p.errorf("a character class may not start with %q (PCRE reads a POSIX class there)", c)
	}
	members := 0
	for {
		if !p.more() {
			p.pos = start
			return set, p.errorf("missing ']'")
		}
		c := p.peek()
		if c == ']' {
			if members == 0 {
				return set, p.errorf("an empty character class")
			}
			p.pos++
			break
		}
		if c == '\\' && p.d == RegexHeader {
			s, err := p.escape(true)
			if err != nil {
				return set, err
			}
			set.union(s)
			members++
			continue
		}
		if c == '-' {
			if members > 0 && p.pos+1 < len(p.s) && p.s[p.pos+1] != ']' {
				return set, p.errorf("'-' in a character class must be first, last or between two letters or digits")
			}
			set.add(c)
			members++
			p.pos++
			continue
		}
		if !p.classMember(c) {
			return set, p.errorf("%s is not allowed in a character class", describeByte(c))
		}
		if p.pos+2 < len(p.s) && p.s[p.pos+1] == '-' && p.s[p.pos+2] != ']' {
			hi := p.s[p.pos+2]
			if !sameKind(c, hi) || hi < c {
				return set, p.errorf("a range must go up between two lower-case letters, two upper-case letters or two digits")
			}
			set.addRange(c, hi)
			p.pos += 3
		} else {
			set.add(c)
			p.pos++
		}
		members++
	}
	if negated {
		// The complement of a case-closed set is case-closed.
		for i := range set {
			set[i] = ^set[i]
		}
	}
	return set, nil
}

// classMember: what may stand for itself in a class. Not "[", "]", "\",
// "^" (negation only, first), quotes, "$", braces or whitespace.
func (p *regexParser) classMember(c byte) bool {
	return p.isLiteral(c) || containsByte(".*+?()|", c)
}

func sameKind(a, b byte) bool {
	kind := func(c byte) int {
		switch {
		case 'a' <= c && c <= 'z':
			return 1
		case 'A' <= c && c <= 'Z':
			return 2
		case '0' <= c && c <= '9':
			return 3
		}
		return 0
	}
	return kind(a) != 0 && kind(a) == kind(b)
}
