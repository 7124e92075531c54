# frozen_string_literal: true
# backtick_javascript: true

# String#split by a Regexp (and every JS `string.split(regexp)` in Opal's corelib) takes
# the ECMAScript algorithm of RegExp.prototype[Symbol.split] on an exec loop. Opal bridges
# RegExp and so changes RegExp.prototype, and V8 then runs the built-in split on its slow
# path, where it constructs a new sticky RegExp for every call: about 30 times the cost of
# the split itself for a short string. Rack splits headers and addresses by Regexps on
# every request (Request#ip, split_header).
#
# The result is the specification's (ECMA-262, RegExp.prototype [ @@split ]): the pieces
# between matches, each match's captures after its piece (undefined when a group did not
# take part), an empty match never at the position where the last piece ended, the limit
# counted over pieces and captures. Where the built-in sticky splitter tries each position
# in turn, this searches forward with a global copy of the pattern, which finds the same
# first match. A sticky pattern, or one whose class is not RegExp itself (a species), still
# goes to the built-in.
%x{
  var up_builtin_split = RegExp.prototype[Symbol.split];
  var up_exec = RegExp.prototype.exec;

  // The code unit index after the character at `index`: a surrogate pair is one character
  // when the pattern matches by code points (and the search may stop between its halves,
  // where the built-in splitter never tries).
  function up_advance(string, index, unicode) {
    if (!unicode || index + 1 >= string.length) return index + 1;
    var first = string.charCodeAt(index);
    if (first < 0xd800 || first > 0xdbff) return index + 1;
    var second = string.charCodeAt(index + 1);
    return (second < 0xdc00 || second > 0xdfff) ? index + 1 : index + 2;
  }

  // One global copy per source and flags, private to split, so the caller's lastIndex is
  // not moved. Keyed by text, not by object: Opal makes a new RegExp each time a literal is
  // evaluated (and String#split another, with the `gm` flags). The table is emptied when it
  // grows past a bound, for programs that build patterns at run time.
  var up_splitters = new Map();
  function up_splitter(regexp) {
    // The flags one by one: the `flags` getter (which reads them all) is on V8's slow path too.
    var key = (regexp.ignoreCase ? 'i' : '') + (regexp.multiline ? 'm' : '') + (regexp.dotAll ? 's' : '') +
      (regexp.unicode ? 'u' : '') + (regexp.unicodeSets === true ? 'v' : '') + (regexp.hasIndices ? 'd' : '');
    var splitter = up_splitters.get(key + '/' + regexp.source);
    if (splitter === undefined) {
      if (up_splitters.size >= 512) up_splitters.clear();
      splitter = new RegExp(regexp.source, key + 'g');
      up_splitters.set(key + '/' + regexp.source, splitter);
    }
    return splitter;
  }

  Object.defineProperty(RegExp.prototype, Symbol.split, {
    configurable: true, writable: true, enumerable: false,
    value: function(input, limit) {
      if (!(this instanceof RegExp) || this.constructor !== RegExp || this.sticky) {
        return up_builtin_split.call(this, input, limit);
      }
      var string = String(input), lim = limit === undefined ? 4294967295 : limit >>> 0, out = [];
      if (lim === 0) return out;
      var splitter = up_splitter(this), unicode = this.unicode || this.unicodeSets === true, match;
      var size = string.length;
      if (size === 0) {
        splitter.lastIndex = 0;
        match = up_exec.call(splitter, string);
        if (match !== null && match.index === 0) return out;
        out.push(string);
        return out;
      }
      var last = 0, from = 0, end, i;
      while (from < size) {
        splitter.lastIndex = from;
        match = up_exec.call(splitter, string);
        if (match === null) break;
        end = Math.min(splitter.lastIndex, size);
        if (match.index >= size) break;
        if (unicode && match.index > from && up_advance(string, match.index - 1, true) > match.index) {
          from = match.index + 1;
          continue;
        }
        if (end === last) {
          from = up_advance(string, match.index, unicode);
          continue;
        }
        out.push(string.slice(last, match.index));
        if (out.length === lim) return out;
        last = end;
        for (i = 1; i < match.length; i++) {
          out.push(match[i]);
          if (out.length === lim) return out;
        }
        from = last;
      }
      out.push(string.slice(last));
      return out;
    }
  });
}
