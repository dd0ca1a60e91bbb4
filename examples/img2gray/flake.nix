{
  description = "Flake for the img2gray kernel";

  inputs = {
    kernel-builder.url = "github:huggingface/kernels";
  };

  outputs =
    { self, kernel-builder }:
    kernel-builder.lib.genKernelFlakeOutputs {
      inherit self;
      path = ./.;
      # Test dependencies for the tests/ that the Nix build runs.
      pythonCheckInputs = ps: with ps; [ pillow ];
    };
}
