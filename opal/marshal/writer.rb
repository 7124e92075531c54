# frozen_string_literal: true
# backtick_javascript: true

module Marshal
  # One Marshal.dump: walks an object graph and collects its bytes in MRI's order.
  # It keeps the two tables of the format: symbols already written (a second use is a
  # symlink, `;n`) and objects already written (a second use of the same object is a link,
  # `@n`; every object but nil, booleans, Fixnums and symbols takes a number, linked or not).
  #
  # What Opal's values cannot tell apart is written as the nearer kind:
  # - a Symbol is a String on Opal, so a Symbol value is written as a String (names, where
  #   the format calls for a symbol — class names, Struct members, instance variables, the
  #   encoding — are written as symbols);
  # - a Float with no fraction is an Integer on Opal, so 1.0 is written as 1;
  # - Strings have no identity on Opal (two equal Strings are `equal?`), so a String is
  #   never linked: the same String twice is written twice, as two equal Strings;
  # - Integers are exact up to 2**53, as JavaScript numbers.
  class Writer
    FIXNUM_MIN = -(2**30)
    FIXNUM_MAX = 2**30 - 1

    def initialize(limit)
      @limit = limit
      @bytes = `new Uint8Array(64)`
      @length = 0
      @symbols = {}
      @objects = `new Map()`
      @count = 0
    end

    # The bytes of `obj`, with the version header, as a binary String.
    def dump(obj)
      byte(MAJOR_VERSION)
      byte(MINOR_VERSION)
      write(obj, @limit)
      RackCompat::Bytes.from_buffer(`#{@bytes}.subarray(0, #{@length})`)
    end

    private

    # The bytes go into one typed array that doubles when full: an Opal Array of numbers is
    # read element by element on V8's slow path (Opal changes Array.prototype's prototype)
    # when it is copied into a Buffer.
    def reserve(count)
      %x{
        var need = #{@length} + count, bytes = #{@bytes};
        if (need <= bytes.length) return nil;
        var size = bytes.length * 2;
        while (size < need) size *= 2;
        var grown = new Uint8Array(size);
        grown.set(bytes.subarray(0, #{@length}));
        #{@bytes = `grown`};
        return nil;
      }
    end

    def byte(value)
      reserve(1)
      `#{@bytes}[#{@length}] = #{value} & 0xff`
      @length += 1
    end

    def type(char)
      byte(`#{char}.charCodeAt(0)`)
    end

    # A length or a Fixnum: 0, one byte for -123..122, else a count byte and 1-4 bytes,
    # least significant first.
    def long(value)
      %x{
        var x = #{value};
        if (x === 0) return #{byte(0)};
        if (x > 0 && x < 123) return #{byte(`x + 5`)};
        if (x < 0 && x > -124) return #{byte(`x - 5`)};
        var out = [];
        for (var i = 1; i <= 4; i++) {
          out.push(x & 0xff);
          x = x >> 8;
          if (x === 0) { #{byte(`i`)}; break; }
          if (x === -1) { #{byte(`256 - i`)}; break; }
        }
        for (var j = 0; j < out.length; j++) #{byte(`out[j]`)};
        return nil;
      }
    end

    def raw_bytes(buffer)
      long(`#{buffer}.length`)
      reserve(`#{buffer}.length`)
      `#{@bytes}.set(#{buffer}, #{@length})`
      @length += `#{buffer}.length`
      nil
    end

    def utf8(str)
      `Buffer.from(#{str}.toString(), 'utf8')`
    end

    def ascii?(str)
      `/^[\x00-\x7f]*$/.test(#{str}.toString())`
    end

    def symbol(name)
      name = name.to_s
      index = @symbols[name]
      if index
        type(';')
        return long(index)
      end
      @symbols[name] = @symbols.size
      if ascii?(name)
        type(':')
        return raw_bytes(utf8(name))
      end
      type('I')
      type(':')
      raw_bytes(utf8(name))
      long(1)
      symbol('E')
      type('T')
    end

    def remember(obj)
      `#{@objects}.set(#{obj}, #{@count})` if identity?(obj)
      @count += 1
    end

    # Objects and Floats can be linked; a Float is the same object as an equal one, as
    # MRI's flonums are. Strings cannot (see the class comment).
    def identity?(obj)
      `typeof #{obj} === 'number' || (typeof #{obj} === 'object' && !#{obj}.$$is_string)`
    end

    def link?(obj)
      index = `#{identity?(obj)} ? #{@objects}.get(#{obj}) : undefined`
      return false if `#{index} === undefined`

      type('@')
      long(index)
      true
    end

    def write(obj, limit)
      raise ArgumentError, 'exceed depth limit' if limit == 0

      # Compared as JS values: on Opal `nil === 1.5` is true.
      if `#{obj} === nil` then type('0')
      elsif `#{obj} === true` then type('T')
      elsif `#{obj} === false` then type('F')
      elsif `#{obj}.$$is_number && #{obj} % 1 === 0` then integer(obj)
      elsif !link?(obj)
        limit -= 1 if limit > 0
        object(obj, limit)
      end
    end

    def integer(value)
      if value >= FIXNUM_MIN && value <= FIXNUM_MAX
        type('i')
        return long(value)
      end
      @count += 1
      type('l')
      type(value < 0 ? '-' : '+')
      digits = []
      rest = value.abs
      while rest > 0
        digits << rest % 256
        rest = (rest / 256).floor
      end
      digits << 0 if digits.size.odd?
      long(digits.size / 2)
      digits.each { |d| byte(d) }
    end

    def object(obj, limit)
      if responds?(obj, '$marshal_dump')
        remember(obj)
        type('U')
        class_name(obj)
        return write(obj.marshal_dump, limit)
      end
      return user_dump(obj, limit) if responds?(obj, '$_dump')

      # Strings, Arrays and Hashes are told by their marks first: `Float === obj` walks the
      # ancestors of every object that is not a Float.
      if `#{obj}.$$is_string` then string(obj)
      elsif `#{obj}.$$is_array` then array(obj, limit)
      elsif `#{obj}.$$is_hash` then hash(obj, limit)
      else typed(obj, limit)
      end
    end

    # respond_to?(name, true), through Opal's own check: it calls the object's respond_to?
    # or respond_to_missing? only when they are not Kernel's.
    def responds?(obj, jsid)
      return obj.respond_to?(`#{jsid}.slice(1)`, true) if `#{obj}['$respond_to?'] == null`

      `var found = Opal.respond_to(#{obj}, #{jsid}, true)`
      `found != null && found !== false && found !== nil`
    end

    def typed(obj, limit)
      case obj
      when Float then float(obj)
      when Struct then struct(obj, limit)
      when Range then ivars_object(obj, [['excl', obj.exclude_end?], ['begin', obj.begin], ['end', obj.end]], limit)
      when Regexp then regexp(obj)
      when Class then named(obj, 'c')
      when Module then named(obj, 'm')
      else plain(obj, limit)
      end
    end

    def class_name(obj)
      name = obj.class.name
      raise TypeError, "can't dump anonymous class #{obj.class.inspect}" unless name

      symbol(name)
    end

    # `C` and the class's name, for a String, Array, Hash or Regexp of a subclass.
    def user_class(obj, base)
      return if obj.class == base

      type('C')
      class_name(obj)
    end

    def user_dump(obj, limit)
      data = obj._dump(limit)
      raise TypeError, '_dump() must return string' unless data.is_a?(String)

      encoding = encoding_ivar(data)
      type('I') if encoding
      type('u')
      class_name(obj)
      raw_bytes(RackCompat::Bytes.to_buffer(data))
      write_encoding(encoding) if encoding
      remember(obj)
    end

    # The ivar MRI adds for a String's encoding: E true (UTF-8), E false (US-ASCII),
    # encoding "name" (any other but binary), or nil (binary).
    def encoding_ivar(str)
      encoding = str.encoding
      # A String of bytes (RackCompat::Bytes) may still say UTF-8 ("\xff".b on Opal).
      return if encoding == Encoding::BINARY || RackCompat::Bytes.binary?(str)
      return ['E', true] if encoding == Encoding::UTF_8
      return ['E', false] if encoding.name == 'US-ASCII'

      ['encoding', encoding.name]
    end

    def write_encoding(encoding)
      long(1)
      symbol(encoding[0])
      return write(encoding[1], -1) unless encoding[0] == 'encoding'

      @count += 1
      type('"')
      raw_bytes(utf8(encoding[1]))
    end

    def float(value)
      remember(value)
      type('f')
      raw_bytes(utf8(float_text(value)))
    end

    # MRI's text for a Float: the shortest digits that read back the same, as digits and a
    # point when the point falls within them (or at most three zeros before), else as
    # d.ddd and an exponent.
    def float_text(value)
      %x{
        var d = #{value};
        if (d !== d) return "nan";
        if (d === Infinity) return "inf";
        if (d === -Infinity) return "-inf";
        if (d === 0) return (1 / d < 0) ? "-0" : "0";
        var sign = d < 0 ? "-" : "", parts = Math.abs(d).toExponential().split("e");
        var digits = parts[0].replace(".", ""), decpt = parseInt(parts[1], 10) + 1;
        if (decpt < -3 || decpt > digits.length) {
          return sign + digits[0] + (digits.length > 1 ? "." + digits.slice(1) : "") + "e" + (decpt - 1);
        }
        if (decpt > 0) {
          return sign + digits.slice(0, decpt) + (digits.length > decpt ? "." + digits.slice(decpt) : "");
        }
        return sign + "0." + "0".repeat(-decpt) + digits;
      }
    end

    def string(str)
      remember(str)
      encoding = encoding_ivar(str)
      type('I') if encoding
      user_class(str, String)
      type('"')
      raw_bytes(RackCompat::Bytes.to_buffer(str))
      write_encoding(encoding) if encoding
    end

    def regexp(regexp)
      remember(regexp)
      type('I')
      user_class(regexp, Regexp)
      type('/')
      source = regexp.source
      raw_bytes(utf8(source))
      byte(regexp.options & 7)
      write_encoding(['E', !ascii?(source)])
    end

    def array(array, limit)
      remember(array)
      user_class(array, Array)
      type('[')
      long(array.size)
      array.each { |item| write(item, limit) }
    end

    def hash(hash, limit)
      raise TypeError, "can't dump hash with default proc" if hash.default_proc

      remember(hash)
      user_class(hash, Hash)
      default = hash.default
      type(default.nil? ? '{' : '}')
      long(hash.size)
      hash.each do |key, value|
        write(key, limit)
        write(value, limit)
      end
      write(default, limit) unless default.nil?
    end

    def struct(struct, limit)
      remember(struct)
      type('S')
      class_name(struct)
      members = struct.members
      values = struct.to_a
      long(members.size)
      members.each_with_index do |member, i|
        symbol(member)
        write(values[i], limit)
      end
    end

    def named(mod, kind)
      raise TypeError, "can't dump anonymous #{mod.class.name.downcase} #{mod.inspect}" unless mod.name

      remember(mod)
      type(kind)
      raw_bytes(utf8(mod.name))
    end

    def plain(obj, limit)
      if obj.is_a?(Proc) || obj.is_a?(Method) || obj.is_a?(UnboundMethod) || obj.is_a?(IO)
        raise TypeError, "no _dump_data is defined for class #{obj.class}"
      end

      pairs = obj.instance_variables.map { |name| [name, obj.instance_variable_get(name)] }
      pairs = [['mesg', obj.message], ['bt', obj.backtrace]] + pairs if obj.is_a?(Exception)
      ivars_object(obj, pairs, limit)
    end

    def ivars_object(obj, pairs, limit)
      remember(obj)
      type('o')
      class_name(obj)
      long(pairs.size)
      pairs.each do |name, value|
        symbol(name)
        write(value, limit)
      end
    end
  end
end
