# frozen_string_literal: true
# backtick_javascript: true

module Marshal
  # One Marshal.load: reads MRI's format 4.8 from the bytes of a String and rebuilds the
  # objects, numbering them as the writer did so that links (`@n`) and symlinks (`;n`)
  # find theirs. A Symbol comes back as a String (the same thing on Opal); a String comes
  # back in the encoding its `E`/`encoding` ivar names, binary when it has none.
  class Reader
    def initialize(source, proc, freeze)
      @buffer = RackCompat::Bytes.to_buffer(source)
      @pos = 0
      @proc = proc
      @freeze = freeze
      @symbols = []
      @objects = []
    end

    def load
      major = byte
      minor = byte
      unless major == MAJOR_VERSION && minor <= MINOR_VERSION
        raise TypeError, "incompatible marshal file format (can't be read)\n\tformat version #{MAJOR_VERSION}.#{MINOR_VERSION} required; #{major}.#{minor} given"
      end

      read
    end

    private

    def byte
      raise ArgumentError, 'marshal data too short' if @pos >= `#{@buffer}.length`

      value = `#{@buffer}[#{@pos}]`
      @pos += 1
      value
    end

    def long
      c = byte
      c -= 256 if c > 127
      return 0 if c == 0
      return c - 5 if c > 4
      return c + 5 if c < -4

      value = little_endian(c.abs)
      c < 0 ? value - `Math.pow(256, #{-c})` : value
    end

    # The number in the next `count` bytes, least significant first (Integer#** is
    # avoided: on Opal 256**0 is a Rational).
    def little_endian(count)
      value = 0
      scale = 1
      count.times do
        value += byte * scale
        scale *= 256
      end
      value
    end

    # The next `long` bytes, as a Node Buffer.
    def bytes
      length = long
      raise ArgumentError, 'marshal data too short' if @pos + length > `#{@buffer}.length`

      part = `#{@buffer}.subarray(#{@pos}, #{@pos} + #{length})`
      @pos += length
      part
    end

    def text(buffer)
      `#{buffer}.toString('utf8')`
    end

    def binary(buffer)
      RackCompat::Bytes.from_buffer(buffer)
    end

    def entry(obj)
      @objects << obj
      @objects.size - 1
    end

    def replace(index, obj)
      @objects[index] = obj
      obj
    end

    def const(name)
      name.split('::').inject(Object) { |scope, part| scope.const_get(part) }
    rescue NameError
      raise ArgumentError, "undefined class/module #{name}"
    end

    def symbol
      case (type = byte.chr)
      when ':' then symbol_body(false)
      when ';' then @symbols.fetch(long) { raise ArgumentError, 'bad symbol' }
      when 'I'
        raise ArgumentError, 'dump format error (symlink with encoding)' unless byte.chr == ':'

        symbol_body(true)
      else raise ArgumentError, "dump format error for symbol(0x#{type.ord.to_s(16)})"
      end
    end

    # A symbol's name; with `ivars`, its encoding ivars follow (read and dropped: a
    # symbol's name is text on Opal).
    def symbol_body(ivars)
      name = text(bytes)
      @symbols << name
      long.times { symbol; read } if ivars
      name
    end

    # One object; `ivars` is true after an `I`, when instance variables follow it. Returns
    # the object, as `proc` made it.
    def read(ivars = false)
      obj = read_object(ivars)
      obj = obj.freeze if @freeze && !obj.is_a?(Module)
      @proc ? @proc.call(obj) : obj
    end

    def read_object(ivars)
      case (type = byte.chr)
      when '0' then nil
      when 'T' then true
      when 'F' then false
      when 'i' then long
      when ':' then symbol_body(false)
      when ';' then @symbols.fetch(long) { raise ArgumentError, 'bad symbol' }
      when '@' then @objects.fetch(long) { raise ArgumentError, 'dump format error (unlinked)' }
      when 'I' then read_object(true)
      when 'l' then bignum
      when 'f' then float
      when '"' then string(ivars)
      when '/' then regexp(ivars)
      when '[' then array
      when '{' then hash(false)
      when '}' then hash(true)
      when 'S' then struct
      when 'o' then plain
      when 'U' then user_marshal
      when 'u' then user_load(ivars)
      when 'C' then user_class(ivars)
      when 'e' then extended(ivars)
      when 'c', 'm', 'M' then named
      else raise ArgumentError, "dump format error(0x#{type.ord.to_s(16)})"
      end.tap { |obj| drop_ivars(obj) if ivars && !encoded?(type) }
    end

    # Kinds that take their ivars themselves (their encoding).
    def encoded?(type)
      %w[" / u : ; I C e].include?(type)
    end

    # Instance variables after an `I` on an object that keeps none on Opal (an Array, a
    # Hash) are set where possible and otherwise read past.
    def drop_ivars(obj)
      long.times do
        name = symbol
        value = read
        obj.instance_variable_set(name, value) if name.start_with?('@') && obj.respond_to?(:instance_variable_set) && !obj.is_a?(Array) && !obj.is_a?(Hash)
      end
    end

    # The encoding named by the ivars after a String: UTF-8 for `E` true, US-ASCII for
    # `E` false, the named one for `encoding`, binary when there are none.
    def encoding_ivars(ivars)
      return Encoding::BINARY unless ivars

      encoding = Encoding::BINARY
      long.times do
        name = symbol
        value = read
        encoding = value ? Encoding::UTF_8 : Encoding::US_ASCII if name == 'E'
        encoding = Encoding.find(value) if name == 'encoding'
      end
      encoding
    end

    def encoded_string(buffer, encoding)
      return binary(buffer) if encoding == Encoding::BINARY
      return text(buffer) if encoding == Encoding::UTF_8

      binary(buffer).force_encoding(encoding)
    end

    def bignum
      sign = byte.chr
      length = long * 2
      value = little_endian(length)
      value = -value if sign == '-'
      entry(value)
      value
    end

    def float
      data = text(bytes).split("\0").first.to_s
      value = case data
              when 'nan' then Float::NAN
              when 'inf' then Float::INFINITY
              when '-inf' then -Float::INFINITY
              when '-0' then -0.0
              else `parseFloat(#{data})`
              end
      entry(value)
      value
    end

    def string(ivars)
      index = entry(nil)
      buffer = bytes
      replace(index, encoded_string(buffer, encoding_ivars(ivars)))
    end

    def regexp(ivars)
      index = entry(nil)
      source = bytes
      options = byte
      encoding_ivars(ivars)
      replace(index, Regexp.new(text(source), options))
    end

    def array
      array = []
      entry(array)
      long.times { array.push(read) }
      array
    end

    def hash(default)
      hash = {}
      entry(hash)
      long.times do
        key = read
        hash[key] = read
      end
      hash.default = read if default
      hash
    end

    def struct
      klass = const(symbol)
      raise TypeError, "class #{klass} not a struct" unless klass < Struct

      obj = klass.new
      entry(obj)
      members = klass.members.map(&:to_s)
      long.times do
        member = symbol
        raise TypeError, "struct #{klass} not compatible (:#{member} for #{members.inspect})" unless members.include?(member)

        obj[member] = read
      end
      obj
    end

    def plain(klass = const(symbol))
      index = entry(obj = klass.allocate)
      ivars = []
      long.times { ivars << [symbol, read] }
      return replace(index, range(ivars)) if klass <= Range
      return replace(index, exception(klass, ivars)) if klass <= Exception

      ivars.each { |name, value| obj.instance_variable_set(name, value) }
      obj
    end

    def range(ivars)
      fields = ivars.to_h
      Range.new(fields['begin'], fields['end'], fields['excl'])
    end

    def exception(klass, ivars)
      fields = ivars.to_h
      error = klass.new(fields['mesg'])
      error.set_backtrace(fields['bt']) if fields['bt']
      ivars.each { |name, value| error.instance_variable_set(name, value) if name.start_with?('@') }
      error
    end

    def user_marshal
      klass = const(symbol)
      obj = klass.allocate
      entry(obj)
      raise TypeError, "instance of #{klass} needs to have method `marshal_load'" unless obj.respond_to?(:marshal_load, true)

      obj.marshal_load(read)
      obj
    end

    def user_load(ivars)
      klass = const(symbol)
      data = encoded_string(bytes, encoding_ivars(ivars))
      raise TypeError, "class #{klass} needs to have method `_load'" unless klass.respond_to?(:_load, true)

      obj = klass._load(data)
      entry(obj)
      obj
    end

    # `C`: a String, Array, Hash or Regexp of a subclass.
    def user_class(ivars)
      klass = const(symbol)
      index = @objects.size
      base = read_object(ivars)
      obj = if klass <= String then klass.new(base)
            elsif klass <= Regexp then klass.new(base.source, base.options)
            else
              made = klass.allocate
              made.replace(base)
              made.default = base.default if made.is_a?(Hash)
              made
            end
      @objects[index] = obj
      obj
    end

    def extended(ivars)
      mod = const(symbol)
      obj = read_object(ivars)
      obj.extend(mod)
      obj
    end

    def named
      obj = const(text(bytes))
      entry(obj)
      obj
    end
  end
end
