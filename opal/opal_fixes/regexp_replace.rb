# frozen_string_literal: true
# backtick_javascript: true

# JavaScript's `string.replace(regexp, ...)`, on which Opal's corelib builds String#strip,
# #lstrip, #rstrip, #gsub's escapes and Opal.escape_regexp, takes the ECMAScript algorithm
# of RegExp.prototype[Symbol.replace] on an exec loop. Opal bridges RegExp and so changes
# RegExp.prototype, and V8 then runs the built-in replace on its slow path: about ten
# times the cost for a short string (String#strip of a header value, on every request).
#
# The result is the specification's (ECMA-262, RegExp.prototype [ @@replace ]): every match
# of a global pattern (from lastIndex 0, an empty match moving on by one character, or one
# code point for a unicode pattern) or the first one of another, each replaced by the
# function's result (called with the match, its captures, its position, the string and the
# named groups if any) or by the replacement text with its `$` substitutions. The pattern's
# own exec and lastIndex are used as the specification uses them. A pattern whose exec is
# not the built-in one still goes to the built-in.
%x{
  var up_builtin_replace = RegExp.prototype[Symbol.replace];
  var up_exec = RegExp.prototype.exec;

  function up_next_index(string, index, unicode) {
    if (!unicode || index + 1 >= string.length) return index + 1;
    var first = string.charCodeAt(index);
    if (first < 0xd800 || first > 0xdbff) return index + 1;
    var second = string.charCodeAt(index + 1);
    return (second < 0xdc00 || second > 0xdfff) ? index + 1 : index + 2;
  }

  // The replacement text for one match: `$$`, `$&`, `$``, `$'`, `$n` and `$nn` (a two-digit
  // number past the captures is one digit and a literal digit), `$<name>` when the pattern
  // has named groups; any other `$` is itself (GetSubstitution in ECMA-262).
  function up_substitute(template, matched, string, position, captures, groups) {
    var out = '', i = 0, size = template.length, next, digits, index, close, capture;
    while (i < size) {
      next = template.charAt(i + 1);
      if (template.charCodeAt(i) !== 36 || i + 1 >= size) {
        out += template.charAt(i);
        i += 1;
      } else if (next === '$') {
        out += '$';
        i += 2;
      } else if (next === '&') {
        out += matched;
        i += 2;
      } else if (next === '`') {
        out += string.slice(0, position);
        i += 2;
      } else if (next === "'") {
        out += string.slice(Math.min(position + matched.length, string.length));
        i += 2;
      } else if (next >= '0' && next <= '9') {
        digits = (template.charAt(i + 2) >= '0' && template.charAt(i + 2) <= '9' && i + 2 < size) ? 2 : 1;
        index = parseInt(template.substr(i + 1, digits), 10);
        if (digits === 2 && index > captures.length) {
          digits = 1;
          index = parseInt(next, 10);
        }
        if (index >= 1 && index <= captures.length) {
          if (captures[index - 1] !== undefined) out += captures[index - 1];
        } else {
          out += template.substr(i, 1 + digits);
        }
        i += 1 + digits;
      } else if (next === '<' && groups !== undefined && (close = template.indexOf('>', i + 2)) !== -1) {
        capture = groups[template.slice(i + 2, close)];
        if (capture !== undefined) out += String(capture);
        i = close + 1;
      } else if (next === '<') {
        out += '$<';
        i += 2;
      } else {
        out += '$';
        i += 1;
      }
    }
    return out;
  }

  Object.defineProperty(RegExp.prototype, Symbol.replace, {
    configurable: true, writable: true, enumerable: false,
    value: function(input, replace_value) {
      var functional = typeof replace_value === 'function';
      if (!(this instanceof RegExp) || this.exec !== up_exec) {
        return up_builtin_replace.call(this, input, replace_value);
      }
      var string = String(input), size = string.length, text = functional ? null : String(replace_value);
      // The flags one by one: the `flags` getter (which reads them all) is on V8's slow path too.
      var global = this.global, unicode = false, matches = [], match;
      if (global) {
        unicode = this.unicode || this.unicodeSets === true;
        this.lastIndex = 0;
      }
      while ((match = up_exec.call(this, string)) !== null) {
        matches.push(match);
        if (!global) break;
        if (String(match[0]) === '') this.lastIndex = up_next_index(string, this.lastIndex, unicode);
      }
      var out = '', next = 0, i, j, matched, position, captures, replacement, args;
      for (i = 0; i < matches.length; i++) {
        match = matches[i];
        matched = String(match[0]);
        position = Math.max(Math.min(match.index, size), 0);
        if (functional) {
          args = [matched];
          for (j = 1; j < match.length; j++) args.push(match[j] === undefined ? undefined : String(match[j]));
          args.push(position, string);
          if (match.groups !== undefined) args.push(match.groups);
          replacement = String(replace_value.apply(undefined, args));
        } else if (text.indexOf('$') === -1) {
          replacement = text;
        } else {
          captures = [];
          for (j = 1; j < match.length; j++) captures.push(match[j] === undefined ? undefined : String(match[j]));
          replacement = up_substitute(text, matched, string, position, captures, match.groups);
        }
        if (position >= next) {
          out += string.slice(next, position) + replacement;
          next = position + matched.length;
        }
      }
      return next >= size ? out : out + string.slice(next);
    }
  });
}
