# frozen_string_literal: true

require "json"
# Opal's version alone, not the compiler: outside Bundler the opal gem is not activated yet
# when a start asks whether its bundle is fresh, and Gem.loaded_specs has no entry for it.
require "opal/version"

module Up
  module Node
    # What a compiled bundle was built from: each input file with its size and mtime, the
    # Opal version, and the names of the files in our opal/ directory (a shim added there
    # shadows a file the bundle took from Opal's stdlib, which itself did not change).
    # Up::Node::Bundle writes it next to the bundle and asks it whether a start may reuse the
    # bundle. It owns that one JSON file.
    class Manifest
      def initialize(path, opal_dir)
        @path = path
        @opal_dir = opal_dir
      end

      # True when the manifest exists and nothing it lists changed.
      def current?
        stored = JSON.parse(File.read(@path))
        stored == describe(stored.fetch("inputs").map(&:first))
      rescue SystemCallError, JSON::ParserError, KeyError, NoMethodError
        false
      end

      # inputs: the path of every file the bundle was compiled from.
      def write(inputs)
        tmp = "#{@path}.#{Process.pid}.tmp"
        File.write(tmp, JSON.generate(describe(inputs)))
        File.rename(tmp, @path)
      end

      private

      def describe(inputs)
        {
          "opal" => Opal::VERSION,
          "shims" => Dir.glob("**/*", base: @opal_dir).sort,
          "inputs" => inputs.map do |file|
            stat = File.stat(file)
            [file, stat.size, stat.mtime.to_r.to_s]
          end
        }
      end
    end
  end
end
