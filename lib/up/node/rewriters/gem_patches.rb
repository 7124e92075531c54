# frozen_string_literal: true

module Up
  module Node
    module Rewriters
      # Build-time patches of installed gems' own files: where a gem's text cannot work on
      # Opal as it is, the smallest span is replaced as the file is compiled, its reason
      # beside it. A patch names the gem, the file inside the gem and the exact text it
      # replaces; when that text is not in the file exactly once (the gem changed), the
      # build fails naming the gem, its version and the file, so the patch is redone from the
      # new text instead of silently doing nothing. Up::Node::RubyProcessor applies them to
      # every file it compiles; test/opal/test_gem_patches.rb checks each against the
      # installed gems.
      module GemPatches
        Patch = Struct.new(:from, :to, :why, keyword_init: true)

        class Error < StandardError; end

        # gem name => file inside the gem => its patches, applied in order.
        ALL = {
          "sinatra" => {
            "lib/sinatra/base.rb" => [
              Patch.new(
                from: "      when Symbol\n        template_cache.fetch engine, data, options, views do",
                to: "      when ->(name) { Symbol === name && (settings.templates.key?(name) || name.match?(%r{\\A[\\w/.-]+\\z})) }\n" \
                    "        template_cache.fetch engine, data, options, views do",
                why: "A Symbol is a String on Opal, so every String template (`erb \"<h1>...\"`) was looked up as " \
                     "a view's name; it is a name when it is a template the app registered or reads like a file name."
              )
            ]
          },
          "rack" => {
            "lib/rack/lint.rb" => [
              Patch.new(
                from: "unless value.b !~ /[\\x80-\\xff]/n",
                to: "if value.bytes.any? { |byte| byte > 0x7f }",
                why: "JavaScript regexps have no byte mode: Opal rejects /[\\x80-\\xff]/n, and since `require " \
                     "'rack'` autoloads Rack::Lint, that one line stopped the build of every Rack app."
              ),
              Patch.new(
                from: "if key =~ /[\\(\\),\\/:;<=>\\?@\\[\\\\\\]{}[:cntrl:]]/",
                to: "if key =~ /[\\(\\),\\/:;<=>\\?@\\[\\\\\\]{}\\x00-\\x1f\\x7f]/",
                why: "JavaScript regexps have no [:cntrl:] class; the control characters are spelled out."
              )
            ],
            "lib/rack/common_logger.rb" => [
              Patch.new(
                from: "        Time.now.strftime(\"%d/%b/%Y:%H:%M:%S %z\"),\n",
                to: "        RackCompat::LogTime.now,\n",
                why: "Time#strftime costs tens of microseconds on Opal, for every request's log line; the " \
                     "text changes once a second (opal/rack_compat/log_time.rb)."
              ),
              Patch.new(
                from: "      msg.gsub!(/[^[:print:]]/) { |c| sprintf(\"\\\\x%x\", c.ord) }\n      msg[-1] = \"\\n\"\n",
                to: "      msg = msg.gsub(/[\\u0000-\\u001f\\u007f-\\u009f]/) { |c| sprintf(\"\\\\x%x\", c.ord) }\n" \
                    "      msg = \"\#{msg[0..-2]}\\n\"\n",
                why: "JavaScript regexps have no [:print:] (the control characters are spelled out), and an Opal " \
                     "String has no []=: the line's last character is replaced by building the line again."
              )
            ],
            "lib/rack/multipart/parser.rb" => [
              Patch.new(
                from: "          head = @sbuf[1]\n",
                to: "          head = RackCompat::Bytes.text(@sbuf[1])\n",
                why: "The part's head is read as text when its bytes are UTF-8: on Opal the pieces a regexp cuts " \
                     "from bytes are text, which read each byte above 0x7f as a character (a file name résumé.bin " \
                     "came out as rÃ©sumÃ©.bin)."
              ),
              Patch.new(
                from: "            tag_multipart_encoding(part.filename, part.content_type, part.name, data)\n" \
                      "            name, data = handle_dummy_encoding(part.name, data)\n",
                to: "            name, data = tag_multipart_encoding(part.filename, part.content_type, part.name, data)\n" \
                    "            name, data = handle_dummy_encoding(name, data)\n",
                why: "tag_multipart_encoding changes the name and data in place with force_encoding; an Opal " \
                     "String cannot change, so it returns them and the caller takes them."
              ),
              Patch.new(
                from: "        return if filename\n",
                to: "        return name, body if filename\n",
                why: "(the same) tag_multipart_encoding returns the name and data it was given."
              ),
              Patch.new(
                from: "        name.force_encoding(encoding)\n        body.force_encoding(encoding)\n      end\n",
                to: "        return name.force_encoding(encoding), body.force_encoding(encoding)\n      end\n",
                why: "(the same) tag_multipart_encoding returns the name and data in their encoding."
              )
            ]
          },
          "roda" => {
            "lib/roda.rb" => [
              Patch.new(
                from: "          if meth.is_a?(String)\n",
                to: "          if meth.is_a?(String) && !meth.start_with?('_roda_') && !method_defined?(meth)\n",
                why: "define_roda_method tells a Symbol name (defined as given) from a String (a stem made " \
                     "unique) by its class, and a Symbol is a String on Opal: every route block went to a fresh " \
                     "name and the app answered 404. Roda's own names start with _roda_, and a name the class " \
                     "already has is one a plugin defines again."
              )
            ]
          },
          "rack-protection" => {
            "lib/rack/protection/frame_options.rb" => [
              Patch.new(
                from: "unless frame_options.respond_to? :to_str",
                to: "unless frame_options.respond_to?(:to_str) && !%w[deny sameorigin].include?(frame_options)",
                why: "A Symbol is a String on Opal, so the default :sameorigin was sent as it is instead of " \
                     "upcased; the two values the option documents are upcased as Strings too."
              )
            ]
          }
        }.freeze

        # Where an installed gem's file lives: .../gems/<name>-<version>/<file>.
        GEM_FILE = %r{/gems/(?<name>[^/]+?)-(?<version>\d[^/]*)/(?<file>.+)\z}

        module_function

        # source of the file at abs_path, with the patches for it applied.
        def apply(abs_path, source)
          m = GEM_FILE.match(abs_path.to_s) or return source
          patches = ALL.dig(m[:name], m[:file]) or return source

          patches.reduce(source) { |text, patch| apply_one(text, patch, m) }
        end

        # text with patch applied; raises Error unless patch.from is in it exactly once.
        def apply_one(text, patch, where)
          count = text.scan(patch.from).size
          unless count == 1
            raise Error, "#{where[:name]} #{where[:version]} #{where[:file]}: the text patched for Opal is found " \
                         "#{count} times, not once (#{patch.from.inspect}); redo the patch in " \
                         "lib/up/node/rewriters/gem_patches.rb for this version. Its reason: #{patch.why}"
          end

          text.sub(patch.from) { patch.to }
        end
      end
    end
  end
end
