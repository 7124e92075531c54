# frozen_string_literal: true
# backtick_javascript: true
# use_strict: true

require 'rack_compat/bytes'

# Strings changed in place: `buf = String.new; buf << "a"`, `name.upcase!`, `path.slice!(0)`.
# An Opal String is an immutable JavaScript string, and Opal raised NotImplementedError for
# every such method, which is how Mustermann parses routes, Sinatra builds a content type
# and a redirect's URL, and Tilt renders a template. Two ways, together:
#
# - A String made to be changed (String.new, dup, +@) is an object of its own whose value
#   can change (UpMutableString below; JS sees its value through toString and valueOf, as
#   it sees a boxed String's), so it changes in place and every reference sees the change,
#   as in MRI.
# - Any other String (a literal, a method's result) cannot change. For those the compiler
#   rewrites `buf << x` on a variable, an attribute or a hash entry into "if buf is a
#   String, buf = the changed string" (Up::Node::Rewriters::MutableStrings), and the
#   methods here compute the changed string and MRI's return value. Another reference to
#   such a string keeps the old value: that is the limit.
#
# `[]=` still raises, since rewriting it would cost every Hash assignment.
%x{
  function UpMutableString(value) {
    this.$$up_value = value;
  }
  var up_value = function() { return this.$$up_value; };
  UpMutableString.prototype = Object.create(String.prototype, {
    toString: { value: up_value },
    valueOf: { value: up_value },
    toJSON: { value: up_value },
    length: { get: function() { return this.$$up_value.length; } },
    $$up_mutable: { value: true }
  });

  // A String object holding value, whose value can change; value's encoding is kept.
  Opal.up_mutable = function(value) {
    var string = new UpMutableString(value.toString());
    Opal.up_set_value(string, value);
    return string;
  };

  // __up_mutate's answer for `<<` of a String to a String (not a subclass), as __up_compute
  // gives it, when the parts join as plain JS strings: both text, or bytes
  // (RackCompat::Bytes) with text that is ASCII, which has the same bytes either way. null
  // for every other call. Appends are most of the changes (session cookies, Marshal.dump,
  // templates and loggers build strings so) and the general path allocates several Arrays,
  // a Proc and Node Buffers for each.
  var ASCII = /^[\x00-\x7f]*$/, BYTES = /^[\x00-\xff]*$/;
  var is_bytes = function(string) {
    var internal = string.internal_encoding;
    return internal != null && internal['$binary?']();
  };
  Opal.up_append = function(self, name, args) {
    if (name != '<<' || args.length !== 1 || self.$$class !== Opal.String) return null;
    var other = args[0];
    if (typeof other !== 'string' && !(other != null && typeof other === 'object' && other.$$is_string === true)) return null;
    if (self.$$up_mutable === true && self.$$frozen === true) return null;
    var left = self.toString(), right = other.toString(), left_bytes = is_bytes(self), right_bytes = is_bytes(other), value;
    if (!left_bytes && !right_bytes) {
      value = left + right;
    } else if ((left_bytes ? BYTES : ASCII).test(left) && (right_bytes ? BYTES : ASCII).test(right)) {
      value = Opal.enc(left + right, 'binary');
    } else {
      return null;
    }
    var changed = self.$__up_like(value);
    if (self.$$up_mutable !== true) return [changed, changed];
    Opal.up_set_value(self, changed);
    return [self, self];
  };

  // A boxed String with the value and encoding of the changeable string, which cannot change.
  Opal.up_immutable_copy = function(string) {
    var copy = new String(string.$$up_value);
    if (string.hasOwnProperty('encoding')) {
      copy.encoding = string.encoding;
      copy.internal_encoding = string.internal_encoding;
    }
    return copy;
  };

  // Gives the changeable string the value (and encoding) of value.
  Opal.up_set_value = function(string, value) {
    string.$$up_value = value.toString();
    if (typeof value !== 'string' && value.hasOwnProperty('encoding')) {
      string.encoding = value.encoding;
      string.internal_encoding = value.internal_encoding;
    } else {
      delete string.encoding;
      delete string.internal_encoding;
    }
  };
}

class BasicObject
  # Whether __up_mutate applies: a cheap test the compiled code makes before it.
  def __up_string?
    false
  end
end

class String
  # String.new with encoding: or capacity: (a buffer starts so): Opal took options alone
  # for the string, and read encoding: from the Hash layout of Opal before 1.8.
  class << self
    alias __opal_new new

    def new(*args)
      options = ::Hash === args.last ? args.pop : {}
      string = __opal_new(*args)
      string = string.force_encoding(options[:encoding]) if options[:encoding]
      `self === Opal.String` ? `Opal.up_mutable(string)` : string
    end
  end

  # A copy that can change (a subclass's copies stay as Opal makes them).
  alias __opal_dup dup
  def dup
    `self.$$class === Opal.String` ? `Opal.up_mutable(self)` : __opal_dup
  end

  # Self when it can change, else a copy that can.
  def +@
    `self.$$up_mutable === true && self.$$frozen !== true` ? self : dup
  end

  # Methods that change the string and return it (so the result is the changed string).
  UP_RETURNING_SELF = %w[<< concat prepend insert replace clear reverse! succ! next! encode! unicode_normalize! scrub!
                         force_encoding].freeze

  def __up_string?
    true
  end

  # [the string as name would leave it, what name returns in MRI]. A changeable string
  # changes (and is its own new value); any other is not changed.
  def __up_mutate(name, *args, &block)
    fast = `Opal.up_append(self, name, args)`
    return fast unless `fast === null`

    changed, result = __up_compute(name, *args, &block)
    return [changed, result] unless `self.$$up_mutable === true`

    ::Kernel.raise ::FrozenError.new("can't modify frozen String: #{inspect}", receiver: self) if frozen?
    `Opal.up_set_value(self, changed)`
    [self, `result === changed` ? self : result]
  end

  def __up_compute(name, *args, &block)
    case name
    when '<<' then __up_changed(__up_join([self, __up_appendable(args.first)]))
    when 'concat' then __up_changed(__up_join([self, *args.map { |arg| __up_appendable(arg) }]))
    when 'prepend' then __up_changed(__up_join([*args.map { |arg| __up_appendable(arg) }, self]))
    when 'insert' then __up_changed(__up_insert(*args))
    when 'replace' then __up_changed(__up_like(::Opal.coerce_to!(args.first, ::String, :to_str)))
    when 'clear' then __up_changed(__up_like(''))
    when 'slice!' then __up_slice(*args)
    else __up_bang(name, *args, &block)
    end
  end

  %w[<< concat prepend insert replace clear slice! capitalize! chomp! chop! downcase! gsub! lstrip! next!
     reverse! rstrip! squeeze! strip! sub! succ! swapcase! tr! tr_s! upcase! delete! delete_prefix!
     delete_suffix! unicode_normalize! encode! scrub!].each do |name|
    # Where the compiler could not rewrite the call (the string came from a method call or
    # a constant), MRI's return value, the string unchanged.
    define_method(name) { |*args, &block| __up_mutate(name, *args, &block)[1] }
  end

  private

  def __up_changed(value)
    [value, value]
  end

  def __up_appendable(other)
    return `String.fromCodePoint(#{other})` if ::Integer === other

    ::Opal.coerce_to!(other, ::String, :to_str)
  end

  # The parts joined, as bytes when one is bytes (see opal/README.md), in the kind of
  # string self is.
  def __up_join(parts)
    __up_like(::RackCompat::Bytes.join(parts))
  end

  # value as a string of self's kind: a primitive for a primitive, else a new object of
  # self's class (String.new and dup give such objects, and a subclass keeps its state).
  def __up_like(value)
    %x{
      if (typeof self === 'string') return value;
      var copy = new self.$$class.$$constructor(value.toString());
      if (value.encoding) copy.encoding = value.encoding;
      if (value.internal_encoding) copy.internal_encoding = value.internal_encoding;
      if (self.$$class !== Opal.String) #{`copy`.copy_instance_variables(self)};
      return copy;
    }
  end

  def __up_insert(index, other)
    other = ::Opal.coerce_to!(other, ::String, :to_str)
    at = index.negative? ? length + index + 1 : index
    ::Kernel.raise ::IndexError, "index #{index} out of string" if at.negative? || at > length

    __up_join([__up_part(self[0, at]), other, __up_part(self[at..])])
  end

  # A part cut from self, still bytes if self is (JS substrings drop the mark).
  def __up_part(part)
    ::RackCompat::Bytes.binary?(self) ? ::RackCompat::Bytes.binary(part) : part
  end

  def __up_slice(*args)
    removed = self[*args]
    return [self, nil] if removed.nil?

    start, count = __up_span(*args)
    [__up_join([__up_part(self[0, start]), __up_part(self[(start + count)..])]), __up_part(removed)]
  end

  # Where the part self[*args] starts and how long it is.
  def __up_span(*args)
    first = args.first
    if args.size == 2 && ::Regexp === first
      match = first.match(self)
      [match.begin(args[1]), match[args[1]].length]
    elsif args.size == 2
      start = first.negative? ? length + first : first
      [start, [args[1], length - start].min]
    elsif ::Range === first
      start = first.begin.nil? ? 0 : first.begin
      start += length if start.negative?
      stop = first.end.nil? ? length - 1 : first.end
      stop += length if stop.negative?
      stop -= 1 if first.exclude_end? && !first.end.nil?
      [start, [stop - start + 1, 0].max]
    elsif ::Regexp === first
      match = first.match(self)
      [match.begin(0), match[0].length]
    elsif ::String === first
      [index(first), first.length]
    else
      [first.negative? ? length + first : first, 1]
    end
  end

  # A bang method: the changed string from its plain twin; nil when MRI answers nil
  # (nothing changed; for sub! and gsub!, nothing matched).
  def __up_bang(name, *args, &block)
    changed = __send__(name.chomp('!'), *args, &block)
    return __up_changed(__up_like(changed)) if UP_RETURNING_SELF.include?(name)

    same = if name == 'sub!' || name == 'gsub!'
             pattern = args.first
             ::Regexp === pattern ? !pattern.match?(self) : !include?(pattern.to_str)
           else
             changed == self
           end
    same ? [self, nil] : __up_changed(__up_like(changed))
  end
end
