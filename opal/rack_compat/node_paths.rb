# frozen_string_literal: true
# backtick_javascript: true

require 'nodejs/file'
require 'nodejs/dir'

# Opal's Node File and Dir hand their String arguments straight to fs and path, which throw
# ERR_INVALID_ARG_TYPE for a boxed String object (what Opal makes for strings with an
# encoding, e.g. every env value Rack::MockRequest builds with #b). Each File and Dir class
# method below gets its String arguments as primitive JS strings first.
module RackCompat
  module NodePaths
    def self.primitive(arg)
      arg.is_a?(String) ? `arg.valueOf()` : arg
    end

    def self.wrap(klass, names)
      names.each do |name|
        next unless klass.respond_to?(name)

        original = klass.method(name)
        klass.define_singleton_method(name) do |*args, &block|
          original.call(*args.map { |a| RackCompat::NodePaths.primitive(a) }, &block)
        end
      end
    end
  end
end

RackCompat::NodePaths.wrap(File, %i[
  read write symlink delete unlink exist? realpath join directory? file? readable? size
  size? open stat mtime symlink? absolute_path expand_path basename dirname extname binread
])
RackCompat::NodePaths.wrap(Dir, %i[[] chdir mkdir entries glob foreach exist?])

class File
  alias __opal_initialize initialize

  def initialize(path, flags = 'r')
    __opal_initialize(RackCompat::NodePaths.primitive(path), flags)
  end
end
